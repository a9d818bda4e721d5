"""The bucket of a sharding key, by test/tools/bucket_hash_reference.py (an implementation of
Picodata's hashing that shares no code with picoroute's src/core/bucket_hash.cpp), loaded from its
file and given types here. A rule names a release line's way of hashing doubles: RULE_25_5 ("25.5")
or RULE_26_1 ("26.1"), see src/core/bucket_hash.h and caps.hash_rule."""

import importlib.util
import os
from types import ModuleType
from typing import Any, List, Sequence, Tuple

from .errors import EmuError
from .paths import TOOLS_DIR


def _load() -> ModuleType:
    path = os.path.join(TOOLS_DIR, "bucket_hash_reference.py")
    spec = importlib.util.spec_from_file_location("bucket_hash_reference", path)
    if spec is None or spec.loader is None:
        raise EmuError("cannot load %s" % path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (OSError, SyntaxError) as exc:
        raise EmuError("cannot import %s: %s" % (path, exc))
    return module


_ref: Any = _load()

RULE_25_5: str = _ref.RULE_25_5
RULE_26_1: str = _ref.RULE_26_1
RULES: Tuple[str, ...] = _ref.RULES  # Picodata's, oldest first
DEFAULT_BUCKET_COUNT: int = _ref.DEFAULT_BUCKET_COUNT
# Doubles around every edge of the rules, with what each encodes to: [(value, ...)]
DOUBLE_EDGES: List[Tuple[Any, ...]] = _ref.DOUBLE_EDGES


def bucket_id(values: Sequence[object], bucket_count: int = DEFAULT_BUCKET_COUNT, rule: str = RULE_25_5) -> int:
    """The bucket (1..bucket_count) of a sharding key's values (int, str, bool, None, float,
    decimal.Decimal, uuid.UUID) under `rule`."""
    return int(_ref.bucket_id(list(values), bucket_count, rule))


def encode_key(values: Sequence[object], rule: str = RULE_25_5) -> bytes:
    """The bytes Picodata hashes for a sharding key's values."""
    return bytes(_ref.encode_key(list(values), rule))


def encode_double(value: float, rule: str = RULE_25_5) -> bytes:
    """The bytes Picodata hashes for a double under `rule`."""
    return bytes(_ref.encode_double(value, rule))
