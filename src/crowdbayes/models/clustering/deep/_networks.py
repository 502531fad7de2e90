"""Multilayer perceptrons shared by SCDC and BayesSCDC: Gaussian encoders and the decoders
p(o | x) (Gaussian with a learned diagonal variance, or Bernoulli on values in [0, 1])."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["mlp", "GaussianHead", "Decoder", "DECODERS"]

DECODERS = ("gaussian", "bernoulli")
_LOG_2PI = 1.8378770664093453
_LOGVAR_RANGE = (-8.0, 8.0)


def mlp(n_in: int, hidden: tuple[int, ...], n_out: int) -> nn.Sequential:
    """Linear layers of widths ``hidden`` with ReLU between them, then a linear output."""
    layers: list[nn.Module] = []
    width = n_in
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, n_out))
    return nn.Sequential(*layers)


class GaussianHead(nn.Module):
    """An MLP whose output is a mean and a log-variance of size ``n_out`` each."""

    def __init__(
        self, n_in: int, hidden: tuple[int, ...], n_out: int, logvar_init: float = 0.0
    ) -> None:
        super().__init__()
        self.net = mlp(n_in, hidden, 2 * n_out)
        self.n_out = n_out
        with torch.no_grad():  # start from confident (low-variance) outputs
            self.net[-1].bias[n_out:] += logvar_init

    def forward(self, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.net(inputs)
        mean, logvar = out[..., : self.n_out], out[..., self.n_out :]
        return mean, logvar.clamp(*_LOGVAR_RANGE)


class Decoder(nn.Module):
    """p(o | x; γ): ``log_prob(o, x)`` sums over the observation's dimensions."""

    def __init__(self, latent_dim: int, hidden: tuple[int, ...], n_obs: int, kind: str) -> None:
        super().__init__()
        self.kind = kind
        n_out = 2 * n_obs if kind == "gaussian" else n_obs
        self.net = mlp(latent_dim, tuple(reversed(hidden)), n_out)
        self.n_obs = n_obs

    def log_prob(self, obs: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        out = self.net(x)
        if self.kind == "bernoulli":
            return -F.binary_cross_entropy_with_logits(
                out, obs.expand_as(out), reduction="none"
            ).sum(-1)
        mean, logvar = out[..., : self.n_obs], out[..., self.n_obs :].clamp(*_LOGVAR_RANGE)
        return -0.5 * (((obs - mean) ** 2) * torch.exp(-logvar) + logvar + _LOG_2PI).sum(-1)
