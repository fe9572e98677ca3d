"""The limits on what a spec may hold, each with its reason: a spec file arrives in a pull
request from anyone, so validation must end quickly, in bounded memory, whatever it holds.
docs/specs.md lists them with the errors that name them."""

from typing import Final

from contract.variant import MAX_VARIANTS

MAX_FILE_BYTES: Final = 1024 * 1024
"""A spec file's size. The largest example is 5 KB; a bigger file is a mistake or an attack,
refused before it is read."""

MAX_VALUES: Final = 100_000
"""Values (keys, list items, scalars) in one file, an alias counting as often as it is
used: counted while parsing, so an alias bomb stops here instead of expanding."""

MAX_DEPTH: Final = 32
"""Nesting of lists and mappings; the spec language itself nests six deep."""

MAX_DURATION_SECONDS: Final = 30 * 24 * 3600
"""Any duration (a phase's times, the deadline): a Job's activeDeadlineSeconds must fit an
int64, and a benchmark longer than a month is a typo."""

MAX_COMBINATIONS: Final = 50_000
"""A workflow's targets x models x matrix (plus includes), counted from its lists before
anything is expanded: excludes may bring five times the variant ceiling down to it, and
expanding that many takes about half a second."""

MAX_VARIANTS_CEILING: Final = MAX_VARIANTS
"""No workflow expands past this (contract.variant.MAX_VARIANTS, which records are held to)."""

MIN_SCHEDULE_PERIOD_SECONDS: Final = 3600
"""The shortest `scheduling.every`: each run is a commit in git and a set of records in
results/, and a run of even a small sweep takes minutes; an hourly benchmark is already a
lot of history."""

MAX_REPEATS: Final = 10
"""Repeats of a workflow's variants (`benchmark.repeats`): each is a Job per target, and a
between-run spread needs a handful of runs, not dozens."""

MAX_MODELS: Final = 500
"""Models in one workflow (the zoo example has 50): each committed file is read, hashed and
its archive checked, a few milliseconds apiece."""

MAX_RECORD_BYTES: Final = 64 * 1024 * 1024
"""A results/ record synth reads to find what is done: 10,000 variants' summaries (samples
stay out of git) need a few MiB; anything far beyond that is not a record gather wrote."""

MAX_DESCRIPTION_CHARS: Final = 2000
"""A workflow's or a priority class's `description`: a paragraph. The report heads with it,
and every Job and ConfigMap of the workflow carries it in an annotation, where Kubernetes
allows 256 KiB for all of an object's annotations together."""

MAX_OWNER_CHARS: Final = 254
"""A workflow's `owner`, a team or an e-mail address: the longest address SMTP carries
(RFC 5321). Every Job and ConfigMap carries it in an annotation too."""

MAX_REGION_CHARS: Final = 63
"""A cluster's `region`, e.g. 'us-east-1': each namespace's identity ConfigMap and every
result carry it; the clouds' region names are under 30 characters."""

MAX_URL_CHARS: Final = 2048
"""A model's `url` (written into config.json) and the fleet's `git.url` (into the
GitRepository): the length browsers, proxies and CDNs all accept."""

MAX_CA_BUNDLE_BYTES: Final = 256 * 1024
"""A `ca_bundle` file: a company's CA chain is a few KB, and the whole Mozilla bundle a
system ships (about 140 certificates) is 220 KB. Each travels in a ConfigMap of its own."""

MAX_MODEL_BYTES: Final = 256 * 1024**3
"""A `url` model's `size`: the runner runs a model on one device, and the largest GPU holds
192 GB (B200); a bigger number is a typo in its unit."""

MAX_PATH_CHARS: Final = 4096
"""A model's `image_path`: the longest path Linux resolves (PATH_MAX)."""

MAX_BRANCH_CHARS: Final = 255
"""The fleet's `git.branch`: git keeps a branch as a file under refs/heads/, and a file
name holds at most 255 bytes."""

MAX_IMAGE_NAME_CHARS: Final = 255
"""An image reference's name (registry and path, without tag or digest): the
distribution project's grammar allows no more."""

MAX_PRICE_PER_HOUR: Final = 1_000_000
"""A device-hour's price in `prices`, in any currency: an H100 hour is a few US dollars, a
few hundred yen, tens of thousands of rupiah; a price above a million is a slip of unit."""
