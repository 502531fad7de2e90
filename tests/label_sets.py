"""Names of the shared label sets under ``$CROWDBAYES_DATA/labels`` (one list for all tests)."""

ALL_SETS = [
    "adult_content3",
    "bluebird",
    "d_possent",
    "d_product",
    "dog",
    "duchenne",
    "rte",
    "s_adult",
    "s_rel",
    "temp",
    "trec",
    "web",
    "wsd",
]

# every set with gold labels (adult_content3 has none)
GOLD_SETS = [name for name in ALL_SETS if name != "adult_content3"]
