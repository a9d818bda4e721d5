"""The text the front sends for a statement, where it differs from the client's: version() answered
as the emulated build's, and a WHERE clause over Picodata's DNF limit sent neither routed nor pruned.
Pure: unit-tested in tests/test_front_texts.py."""

import re
from typing import List, Sequence, Tuple

from ..dialect import Token
from ..route import unpruned_text


def version_calls(toks: Sequence[Token]) -> List[Tuple[int, int]]:
    """The (start, end) token indexes of every call version() in a statement's tokens."""
    out = []
    for i in range(len(toks) - 2):
        if (toks[i].kind == "ident" and toks[i].low == "version" and toks[i + 1].text == "("
                and toks[i + 2].text == ")" and (i == 0 or toks[i - 1].text != ".")):
            out.append((i, i + 2))
    return out


def version_call_text(sql: str, toks: Sequence[Token]) -> str:
    """sql with every version() written _picoemu.picodata_version(), which answers what the emulated
    build's version() does (caps.version_function_text; PostgreSQL's own version() would name
    PostgreSQL)."""
    out: List[str] = []
    last = 0
    for a, b in version_calls(toks):
        out.append(sql[last:toks[a].pos] + "_picoemu.picodata_version()")
        last = toks[b].end
    return "".join(out) + sql[last:]


def dnf_text(sql: str, toks: List[Token], chains: int) -> str:
    """The text sent to the server for a statement whose WHERE clause expands into more OR-of-AND
    chains than Picodata expands (513: MAX_DNF_CHAINS = 512 is checked after a pop, see
    caps.dnf_most_chains; capability dnf_chain_limit: 26.1.6, 26.2.1-rc1 and later): Picodata
    then keeps the expression as written (get_dnf_chains returns None, sql-ir/src/ir/transformation/
    dnf.rs) and its bucket discovery finds no key: every replicaset is asked, even for a statement its
    key would have routed. The emulator does the same: its bucket_id terms are written (bucket_id + 0),
    which the views do not prune by (route.unpruned_text), and a comment at the end stops routing
    by the sharding key (key_route.sql routes no statement with a comment). Versions without the cap
    expand every chain and route as usual."""
    text = re.sub(r"[;\s]+$", "", unpruned_text(sql, toks))
    return text + " /* picoemu: %d OR-of-AND chains, over Picodata's DNF limit: not routed */" % chains
