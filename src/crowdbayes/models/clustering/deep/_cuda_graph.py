"""CUDA: the local mean field of BayesSCDC recorded once as a CUDA graph and replayed.

Run eagerly, each of the ~40 small tensor operations of a local iteration
(:func:`~crowdbayes.models.clustering.deep.meanfield.local_meanfield`) costs a kernel launch
whose host-side cost exceeds its run time, so the GPU idles; a replay of a recorded graph
issues them all at once. The training batches all have one size, so one recording serves a
whole restart.
"""

from __future__ import annotations

import torch

from ._conjugate import NIWExpectations
from .meanfield import local_meanfield, padded_product, table_messages

__all__ = ["MeanFieldGraph"]


class MeanFieldGraph:
    """:func:`local_meanfield` of one batch size, recorded once as a CUDA graph and replayed
    for every batch (module docstring).

    Before each replay the inputs are copied into the buffers the graph reads:
    the globals' expectations, the recognition potentials, and for the link messages the
    batch's rows and padded link entries (the table of beliefs is read and written in place).
    """

    def __init__(self, inputs, n_iter: int, table=None, rows=None, entries=None) -> None:
        """Run the mean field once on the first batch's ``inputs`` ``(e, log_pi, J_rec,
        h_rec)`` (on a side stream, which also creates the library handles and workspaces the
        recording needs; ``self.first`` holds its q(z)), then record it. ``table``, ``rows``
        and ``entries`` (padded partners and weights) give the link messages, if any."""
        e, *rest = inputs
        self._inputs = [t.clone() for t in (*e, *rest)]
        messages = None
        if table is not None:
            self._rows = rows.clone()
            self._entries = [t.clone() for t in entries]
            messages = table_messages(table, self._rows, padded_product(*self._entries))

        def run():
            e = NIWExpectations(*self._inputs[:4])
            return local_meanfield(e, *self._inputs[4:], n_iter, messages)[0]

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            first = run()
        torch.cuda.current_stream().wait_stream(side)
        self.first = first.clone()
        self._graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self._graph):
            self._resp = run()

    def __call__(self, inputs, rows=None, entries=None) -> torch.Tensor:
        """q(z) of a batch (of the recorded size) from its inputs, as in :meth:`__init__`."""
        e, *rest = inputs
        for buffer, value in zip(self._inputs, (*e, *rest), strict=True):
            buffer.copy_(value)
        if entries is not None:
            self._rows.copy_(rows)
            for buffer, value in zip(self._entries, entries, strict=True):
                buffer.copy_(value)
        self._graph.replay()
        return self._resp.clone()
