"""Statement judging: what Picodata would say of a statement before it runs. The dialect (its
grammar: refused with `sbroad: rule parsing error`, recorded in the audit), what the router reads in
it (Route: its tokens, its OR-of-AND chains against the DNF limit, the text to send), `forward`
(26.2.1-rc1+: refused by the statement's bucket set), OPTION (read_preference) on a write, and reads
that must be leader reads (26.1.1+). Each verdict and route is cached by text and version (the same
statements come again and again)."""

from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Union

from .. import caps as emu_caps
from .. import dialect, route
from .log import LOG_STATEMENTS, log
from .rewrite import dnf_text, version_call_text, version_calls
from .wire import error_msg, msg

if TYPE_CHECKING:
    from .session import Session

# What route reads in a statement: {"toks": its tokens (None: not read), "chains": its OR-of-AND
# chains, "over": over the DNF limit, "sql": the text to send to the server (rewrite)}
Route = Dict[str, Any]
Params = Optional[Sequence[Optional[str]]]


class Judge:
    def __init__(self, s: "Session") -> None:
        self.s = s

    def refuse(self, kind: str, code: str, text: str, statement: str, extended: bool,
               hint: Optional[str] = None) -> None:
        """Answers Picodata's error for a statement the front refuses, recorded in the audit; in the
        extended protocol, the rest of the batch is skipped."""
        link = self.s.link
        self.s.front.audit.record(self.s, kind, code, text, statement)
        link.synth(error_msg(code, text, hint=hint) + (b"" if extended else msg(b"Z", b"I")))
        if extended:
            link.skip_until_sync = True

    def _error(self, text: str, extended: bool) -> None:
        """Answers Picodata's XX000 text (not a refusal of the dialect: no audit)."""
        link = self.s.link
        link.synth(error_msg("XX000", text) + (b"" if extended else msg(b"Z", b"I")))
        if extended:
            link.skip_until_sync = True

    def verdict(self, sql: str) -> Union[dialect.Verdict, dialect.Reject]:
        """The dialect's verdict on sql at the emulated version (cached)."""
        front = self.s.front
        front.settings.refresh()
        key = (sql, front.settings.version)
        v = front.verdicts.get(key)
        if v is None:
            try:
                v = dialect.validate(sql, key[1])
            except dialect.Reject as rej:
                v = rej
            if len(front.verdicts) > 50000:
                front.verdicts.clear()
            front.verdicts[key] = v
        return v

    def judge(self, sql: str, extended: bool) -> Optional[dialect.Verdict]:
        """The statement's verdict, or None when the dialect refuses it (refused here)."""
        if LOG_STATEMENTS:
            log("statement: " + " ".join(sql.split()))
        v = self.verdict(sql)
        if isinstance(v, dialect.Reject):
            self.refuse("dialect", "XX000", dialect.message(v), sql, extended)
            return None
        return v

    def peek(self, sql: str) -> Optional[dialect.Verdict]:
        """The verdict of a statement as the front will judge it, without judging it (no refusal,
        no log): None when the dialect refuses it."""
        front = self.s.front
        front.settings.refresh()
        v = front.verdicts.get((sql, front.settings.version))
        if v is None:
            try:
                v = dialect.validate(sql, front.settings.version)
            except dialect.Reject:
                return None
        return v if isinstance(v, dialect.Verdict) else None

    # ---- what the router reads -----------------------------------------------------------------
    def route(self, v: dialect.Verdict) -> Route:
        """What route reads in the statement v (cached by text and version): its tokens, its
        OR-of-AND chains, and the text to send to the server ("sql", see rewrite.dnf_text)."""
        front = self.s.front
        key = (v.sql, front.settings.version)
        r = front.routes.get(key)
        if r is None:
            sql = v.sql
            try:
                toks = route.statement_tokens(sql)
                if version_calls(toks):
                    sql = version_call_text(sql, toks)
                    toks = route.statement_tokens(sql)
                r = {"toks": toks, "chains": route.chains(toks)}
            except dialect.Reject:
                r = {"toks": None, "chains": 1}
            r["over"] = emu_caps.has("dnf_chain_limit", key[1]) and r["chains"] > emu_caps.dnf_most_chains()
            r["sql"] = dnf_text(sql, r["toks"], r["chains"]) if r["over"] else sql
            if len(front.routes) > 20000:
                front.routes.clear()
            front.routes[key] = r
        return r

    def count_dnf(self, r: Optional[Route], statement: str) -> None:
        """A statement over the DNF limit (rewrite.dnf_text) is counted and logged each time it runs."""
        front = self.s.front
        if r is not None and r.get("over"):
            front.dnf_over += 1
            log("DNF limit: a WHERE clause of %d chains (Picodata expands at most %d): not routed, every "
                "replicaset is asked (%d statements so far) | %s" % (r["chains"], emu_caps.dnf_most_chains(),
                                                                     front.dnf_over, statement[:200]))

    # ---- forward (26.2.1-rc1+): refused by the statement's bucket set, before it runs -------------
    def refuse_forward(self, opts: Mapping[str, Any], r: Route, params: Params, statement: str,
                       extended: bool) -> bool:
        """Picodata checks forward before it dispatches a statement (reads and writes): under
        forward=off (ro_to_rw) a statement whose bucket set needs more is refused with XX000 and
        Picodata's text (route.forward_verdict). The effective value: the statement's OPTION,
        else the startup option, else the cluster's strict setting (picoemu strict on = off). Not a
        dialect refusal: logged in front.log, not in the audit. True when refused."""
        text = self.forward_text(opts, r, params, statement)
        if text is None:
            return False
        front = self.s.front
        front.forward_refused += 1
        log("forward: refused (%d so far): %s | %s" % (front.forward_refused, text, statement[:300]))
        self._error(text, extended)
        return True

    def forward_text(self, opts: Mapping[str, Any], r: Route, params: Params, statement: str) -> Optional[str]:
        """Picodata's refusal of the statement under the effective forward (refuse_forward), or None."""
        st = self.s.front.settings
        st.refresh()
        wanted = opts.get("forward") or self.s.opts.conn.get("forward") or ("off" if st.d.get("strict") else "on")
        if wanted == "on" or r.get("toks") is None:
            return None
        try:
            return route.forward_verdict(st.d, st.instance, st.version, r["toks"], wanted, params)
        except Exception as exc:  # the emulator's reading failed: the storages' own check stays
            log("forward: statement not judged (%r) | %s" % (exc, statement[:200]))
            return None

    # ---- read_preference (26.1+) --------------------------------------------------------------------
    def refuse_option_use(self, v: dialect.Verdict, statement: str, extended: bool) -> bool:
        """OPTION (read_preference = ...) on a statement that is not a read: Picodata's planner refuses
        it (validate_options_usage, sql-planner/src/ir/options.rs:428-439 at 26.1.1,
        sql-ir/src/ir/options.rs:479 at 26.2.1-rc1 and 26.3.0; SbroadError::Invalid of
        Entity::OptionSpec behind "sbroad: "). Recorded in the audit (kind dialect). True when
        refused."""
        if "read_preference" not in v.options or v.kind != "query" or v.reads:
            return False
        self.refuse("dialect", "XX000", "sbroad: invalid OptionSpec: read_preference option is supported "
                    "only for DQL queries", statement, extended)
        return True

    def refuse_non_leader_read(self, opts: Mapping[str, Any], r: Route, statement: str, extended: bool) -> bool:
        """A read whose read_preference (its OPTION, else the startup option, else the cluster's
        setting) is not leader, of an unlogged table or while the cluster has sql_preemption on:
        refused before it runs with Picodata's text (route.leader_read_refusal). Not a dialect
        refusal: logged in front.log, not in the audit. True when refused."""
        front = self.s.front
        st = front.settings
        if r.get("toks") is None or not dialect.has_read_preference(st.version):
            return False
        if self.s.opts.effective(opts, "read_preference", "read_preference") == "leader":
            return False
        text = route.leader_read_refusal(st.d, r["toks"])
        if text is None:
            return False
        front.leader_refused += 1
        log("read_preference: refused (%d so far): %s | %s" % (front.leader_refused, text, statement[:300]))
        self._error(text, extended)
        return True

    def empty_set_aggregate(self, r: Optional[Route], params: Params) -> bool:
        """Whether the read's rows come back all NULL (route.empty_set_aggregate)."""
        if r is None or r.get("toks") is None:
            return False
        st = self.s.front.settings
        try:
            empty = route.empty_set_aggregate(st.d, st.version, r["toks"], params)
        except Exception as exc:  # the emulator's reading failed: answered as PostgreSQL answers
            log("aggregate: statement not judged (%r)" % exc)
            return False
        if empty:
            log("a scalar aggregate over an empty bucket set: NULL, as Picodata %s answers" % st.version)
        return empty
