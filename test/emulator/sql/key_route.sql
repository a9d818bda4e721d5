-- Routing a statement by its sharding-key predicate, as Picodata does on every version.

-- Picodata routes a statement by its sharding-key predicate on every version. The full parser,
-- key_bucket_full (key_bucket tries a fast path first, below), recognises the simple shape
-- "SELECT ... FROM t WHERE ... AND key = literal ..." (also UPDATE t SET ... WHERE and DELETE FROM t
-- WHERE) in the statement the client sent (current_query()) and computes the bucket the way the
-- storage does. A key given as a parameter ("key = $n") is routed by the value bound to it, as
-- Picodata routes after Bind: the front sets picoemu.bind_params (a JSON array of the text values)
-- before each Bind. Parameters ($n) elsewhere in the WHERE clause do not stop it; anything it is not
-- sure about (OR, joins, subqueries, several statements, a literal or bound value whose type differs
-- from the column's, IS NULL, ...) gives NULL: not routed, every replicaset is asked, which costs
-- more, never less.
CREATE OR REPLACE FUNCTION _picoemu.key_bucket_full(q text, tbl text, keycols text[], keycls text[], bucket_count int)
RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE
  params json := coalesce(nullif(current_setting('picoemu.bind_params', true), ''), '[]')::json;
  lits text[] := '{}';
  m text;
  w text;
  terms text[] := '{}';
  t text;
  r text[];
  col text;
  val text;
  found_cols text[] := '{}';
  found_vals text[] := '{}';
  key bytea := '';
  k int;
  pos int;
BEGIN
  IF q IS NULL OR length(q) > 20000 THEN RETURN NULL; END IF;
  -- the front sends a simple-protocol statement between two of its own (sql_vdbe_opcode_max:
  -- "SELECT set_config('picoemu.vdbe_base', ...);\n<statement>;\nSELECT CASE WHEN s * ...", neither
  -- with a semicolon of its own): the client's statement is the one in the middle
  IF left(q, 39) = 'SELECT set_config(''picoemu.vdbe_base'', ' THEN
    q := substr(q, position(E';\n' in q) + 2);
    q := regexp_replace(q, E';\nSELECT CASE WHEN s \\* [0-9]+ > [0-9]+ THEN 1 / \\(s - s\\) ELSE 0 END FROM \\(SELECT .*$', '');
  END IF;
  -- string literals out of the way: 'x' -> #<n>#
  LOOP
    m := substring(q from '''(?:[^'']|'''')*''');
    EXIT WHEN m IS NULL;
    lits := lits || replace(substr(m, 2, length(m) - 2), '''''', '''');
    q := overlay(q placing '#' || cardinality(lits) || '#' from position(m in q) for length(m));
    EXIT WHEN cardinality(lits) > 100;
  END LOOP;
  -- comments and dollar quotes could hide text; parameter placeholders $n cannot
  IF q ~ '--|/\*' OR regexp_replace(q, '\$[0-9]+', '', 'g') ~ '\$' THEN RETURN NULL; END IF;
  -- a PostgreSQL client's cursor over the statement (postgres_fdw's "DECLARE c1 CURSOR FOR SELECT
  -- ..."), which only a private port receives (Picodata has no cursors: its fronts refuse DECLARE)
  IF lower(left(ltrim(q), 7)) = 'declare' THEN
    q := regexp_replace(q, '^\s*declare\s+\S+\s+(?:no\s+)?(?:scroll\s+)?cursor\s+(?:with(?:out)?\s+hold\s+)?for\s+', '', 'i');
  END IF;
  q := regexp_replace(q, ';\s*$', '');
  IF position(';' in q) > 0 THEN RETURN NULL; END IF;
  q := lower(regexp_replace(q, '\s+', ' ', 'g'));
  q := replace(q, '"', '');
  IF q ~ '\m(join|union|except|intersect)\M' OR q ~ '^\s*with\M'
     OR (SELECT count(*) FROM regexp_matches(q, '\mselect\M', 'g')) > 1 THEN
    RETURN NULL;
  END IF;
  r := regexp_match(q, '^\s*(?:select .+? from|update|delete from) (?:public\.)?([a-z_][a-z0-9_]*) (?:set .+? )?where (.+)$');
  IF r IS NULL OR r[1] <> tbl THEN RETURN NULL; END IF;
  w := regexp_replace(r[2], ' (order by|group by|limit|having|option|returning|offset)\M.*$', '');
  -- a conjunction only: with no OR and no NOT, parentheses do not change which terms must hold
  IF w ~ '\m(or|not)\M' THEN RETURN NULL; END IF;
  terms := regexp_split_to_array(w, ' and ');
  FOREACH t IN ARRAY terms LOOP
    -- without its parentheses, the term must read exactly "column = literal"
    t := btrim(translate(t, '()', ''));
    -- (a parameter may carry a cast, as postgres_fdw writes it: $1::bigint)
    r := regexp_match(t, '^([a-z_][a-z0-9_]*) ?= ?(-?[0-9]+|#[0-9]+#|\$[0-9]+(?:::[a-z0-9_]+)?)$');
    IF r IS NULL THEN
      r := regexp_match(t, '^(-?[0-9]+|#[0-9]+#|\$[0-9]+(?:::[a-z0-9_]+)?) ?= ?([a-z_][a-z0-9_]*)$');
      IF r IS NOT NULL THEN r := ARRAY[r[2], r[1]]; END IF;
    END IF;
    IF r IS NOT NULL AND NOT (r[1] = ANY(found_cols)) THEN
      found_cols := found_cols || r[1];
      found_vals := found_vals || r[2];
    END IF;
  END LOOP;
  FOR k IN 1 .. cardinality(keycols) LOOP
    pos := array_position(found_cols, keycols[k]);
    IF pos IS NULL THEN RETURN NULL; END IF;
    val := found_vals[pos];
    IF val ~ '^\$[0-9]+::' THEN
      -- a cast to a type of the column's class only (another type would be hashed as that type)
      IF NOT ((keycls[k] = 'int' AND split_part(val, '::', 2) IN ('bigint', 'integer', 'smallint', 'int8', 'int4', 'int2'))
              OR (keycls[k] = 'text' AND split_part(val, '::', 2) IN ('text', 'varchar'))) THEN
        RETURN NULL;
      END IF;
      val := split_part(val, '::', 1);
    END IF;
    IF val ~ '^\$[0-9]+$' THEN
      -- a bound value: the text of parameter n (NULL, binary or missing: not routed)
      val := params ->> (substr(val, 2)::int - 1);
      IF val IS NULL THEN RETURN NULL; END IF;
      IF keycls[k] = 'int' AND val ~ '^-?[0-9]+$' AND length(val) < 19 THEN
        key := key || _picoemu.enc_int(val::int8);
      ELSIF keycls[k] = 'text' THEN
        key := key || _picoemu.enc_text(val);
      ELSE
        RETURN NULL;
      END IF;
    ELSIF keycls[k] = 'int' AND val ~ '^-?[0-9]+$' AND length(val) < 19 THEN
      key := key || _picoemu.enc_int(val::int8);
    ELSIF keycls[k] = 'text' AND val ~ '^#[0-9]+#$' THEN
      key := key || _picoemu.enc_text(lits[substr(val, 2, length(val) - 2)::int]);
    ELSE
      RETURN NULL;
    END IF;
  END LOOP;
  RETURN _picoemu.bucket_id(key, bucket_count);
EXCEPTION WHEN OTHERS THEN
  RETURN NULL;
END $f$;

-- The fast path, for the shape a client sends for one key: "SELECT a, b FROM t WHERE (k = 5)". One
-- regular expression without captures checks the whole text: keywords in any case, names quoted or
-- not, t or public.t, a list of plain names or *, one term k = an integer or a 'text' without a quote
-- in it, in parentheses or not, a final semicolon or not. Its words are then split out of the text
-- without regular expressions (capture groups cost more than the rest together). Every text it
-- answers is read the same way by key_bucket_full and routed to the same bucket (test_key_route.py
-- compares the two); for anything else it gives NULL, "not sure": a name that is one of the words
-- key_bucket_full looks for, a key of several columns, a parameter, another table or column, a
-- literal of another type, another term... The text is lowered as key_bucket_full lowers it; a text
-- key is taken from the text as sent. As few PL/pgSQL expressions as possible: each is set up again
-- in every transaction.
CREATE OR REPLACE FUNCTION _picoemu.key_bucket_fast(q text, tbl text, keycols text[], keycls text[], bucket_count int)
RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE
  l text := lower(q);
  -- its words: quotes dropped, blanks and ( ) ; = , as separators, a text key as one word '
  w text[];
  n int;
BEGIN
  IF cardinality(keycols) <> 1 OR length(q) > 20000 OR l !~ ('^\s*select\s+(?:\*|"?[a-z_][a-z0-9_]*"?(?:\s*,\s*"?[a-z_][a-z0-9_]*"?)*)'
      '\s+from\s+(?:"?public"?\.)?"?[a-z_][a-z0-9_]*"?\s+where\s+\(?\s*"?[a-z_][a-z0-9_]*"?\s*=\s*(?:-?[0-9]+|''[^'']*'')\s*\)?\s*;?\s*$') THEN
    RETURN NULL;
  END IF;
  w := array_remove(string_to_array(translate(split_part(l, '''', 1) || CASE WHEN strpos(l, '''') > 0 THEN '''' ELSE '' END,
                                              E'\t\n\r\f();=,' || chr(11) || '"', '          '), ' '), '');
  n := cardinality(w);
  -- select <names> from [public.]<table> where <column> <value>
  IF w[1] <> 'select' OR w[n - 4] <> 'from' OR w[n - 2] <> 'where' OR n < 6
     OR w[n - 3] NOT IN (tbl, 'public.' || tbl) OR w[n - 1] <> keycols[1]
     OR w[2 : n - 5] || tbl || w[n - 1] && '{select,from,where,set,update,delete,public,with,join,union,except,intersect,and,or,not,order,group,by,limit,having,option,returning,offset}'::text[] THEN
    RETURN NULL;
  ELSIF keycls[1] = 'int' AND w[n] <> '''' AND length(w[n]) < 19 THEN
    RETURN _picoemu.bucket_id(_picoemu.enc_int(w[n]::int8), bucket_count);
  ELSIF keycls[1] = 'text' AND w[n] = '''' THEN
    RETURN _picoemu.bucket_id(_picoemu.enc_text(split_part(q, '''', 2)), bucket_count);
  END IF;
  RETURN NULL;
END $f$;

-- The bucket of a statement's key, or NULL: not routed. The fast path answers the common shape, the
-- full parser everything else. The bound values are read first, as key_bucket_full reads them, so
-- that a setting that is no JSON array fails the statement whichever of the two answers.
-- The string constants of key_bucket_fast and key_bucket_full (regular expressions with
-- backslashes) and of the hashing (bytea constants) read as written only with
-- standard_conforming_strings on, which a session may have turned off: the entry points set it.
CREATE OR REPLACE FUNCTION _picoemu.key_bucket(q text, tbl text, keycols text[], keycls text[], bucket_count int)
RETURNS bigint LANGUAGE plpgsql IMMUTABLE SET standard_conforming_strings = on AS $f$
DECLARE
  params json := coalesce(nullif(current_setting('picoemu.bind_params', true), ''), '[]')::json;
BEGIN
  RETURN coalesce(_picoemu.key_bucket_fast(q, tbl, keycols, keycls, bucket_count),
                  _picoemu.key_bucket_full(q, tbl, keycols, keycls, bucket_count));
END $f$;

-- A statement's list of buckets, "SELECT ... FROM t WHERE [<conditions> AND] bucket_id IN (n, ...)",
-- by which Picodata restricts a statement from 26.2.1-rc2 while it expands to at most 513 OR-of-AND
-- chains (the view passes lists = true on those versions): NULL when the text is not of that shape,
-- when the list is not a conjunct of the whole WHERE clause, or when the conditions before it have
-- an OR (they could multiply the chains past the limit). Leaving out a branch whose buckets hold
-- none of the list does not change the answer (a branch keeps only its own buckets); it saves the
-- branch's work, as Picodata does not send the statement to that replicaset.
CREATE OR REPLACE FUNCTION _picoemu.bucket_list(q text, tbl text) RETURNS int8[]
LANGUAGE plpgsql IMMUTABLE SET standard_conforming_strings = on AS $f$
DECLARE
  m text[];
  w text;
  prev text;
  l int8[];
BEGIN
  IF q IS NULL OR length(q) > 100000 THEN RETURN NULL; END IF;
  q := lower(q);
  IF q ~ '--|/\*|\$' OR (SELECT count(*) FROM regexp_matches(q, '\mselect\M', 'g')) <> 1 THEN
    RETURN NULL;
  END IF;
  m := regexp_match(q, '^\s*select\s.*?\sfrom\s+(?:"?public"?\.)?"?([a-z_][a-z0-9_]*)"?\s+where\s+(.*?)"?bucket_id"?\s+in\s*\(([0-9,\s]+)\)\s*(?:option\s*\([^()]*\))?\s*;?\s*$');
  IF m IS NULL OR m[1] <> tbl THEN RETURN NULL; END IF;
  w := m[2];
  IF w <> '' THEN
    IF w !~ '\mand\s*$' THEN RETURN NULL; END IF;
    w := regexp_replace(regexp_replace(w, '\mand\s*$', ''), '''(?:[^'']|'''')*''', '''''', 'g');
    IF w ~ '\mor\M' OR w ~ '\mand\s*$' OR btrim(w) = '' THEN RETURN NULL; END IF;
    LOOP  -- the parenthesised groups, innermost first: what is left must have no parenthesis
      prev := w;
      w := regexp_replace(w, '\([^()]*\)', '', 'g');
      EXIT WHEN w = prev;
    END LOOP;
    IF w ~ '[()]' THEN RETURN NULL; END IF;
  END IF;
  l := string_to_array(regexp_replace(m[3], '\s', '', 'g'), ',')::int8[];
  IF cardinality(l) = 0 OR cardinality(l) > 513 THEN RETURN NULL; END IF;  -- emu_caps.dnf_most_chains
  RETURN l;
EXCEPTION WHEN OTHERS THEN
  RETURN NULL;
END $f$;

-- The last statement's answer is kept in the session (picoemu.key_cache): a statement asks once per
-- branch of the view.
-- IMMUTABLE on purpose (like _picoemu.read_part()): the planner folds it, so a branch of another
-- replicaset than the key's owner has no scan at all. A foreign scan connects to its server when the
-- executor starts, even under a false one-time filter: a stopped master would make every statement
-- of the view fail, not only those that need its replicaset. A plan cached for a prepared statement
-- keeps its answer, which is right: the text, hence the key, is the same; the views are created again
-- when the bucket map changes.
-- The branch's own bucket ranges (rs_ranges: start, end, start, end, ...) come with the call, from
-- the view's text, rather than from _picoemu.bucket_range: a statement that waited for the lock of a
-- view being created again plans with the new view but with the snapshot it took before the wait,
-- in which the table still shows the old map; the two would disagree on a bucket just moved, and the
-- statement would find no row.
-- Without a key, a statement restricted by a bucket list (lists: the version does that) asks only
-- the branches that hold one of its buckets (_picoemu.bucket_list).
CREATE OR REPLACE FUNCTION _picoemu.asked(tbl text, tier text, rs text, keycols text[], keycls text[], bucket_count int,
                                          rs_ranges int8[], lists boolean)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE
  q text := current_query();
  tag text := md5(coalesce(q, '') || '|' || coalesce(current_setting('picoemu.bind_params', true), '')
                  || '|' || tbl || '|' || bucket_count || '|' || lists);
  c text := current_setting('picoemu.key_cache', true);
  b bigint;
  l text;
BEGIN
  IF c IS NOT NULL AND split_part(c, ':', 1) = tag THEN
    b := nullif(split_part(c, ':', 2), '')::bigint;
    l := nullif(split_part(c, ':', 3), '');
  ELSE
    b := _picoemu.key_bucket(q, tbl, keycols, keycls, bucket_count);
    IF b IS NULL AND lists THEN
      l := array_to_string(_picoemu.bucket_list(q, tbl), ',');
    END IF;
    PERFORM set_config('picoemu.key_cache', tag || ':' || coalesce(b::text, '') || ':' || coalesce(l, ''), false);
  END IF;
  IF b IS NULL AND l IS NOT NULL THEN
    RETURN EXISTS (SELECT 1 FROM unnest(string_to_array(l, ',')::int8[]) x,
                                 generate_series(1, coalesce(array_length(rs_ranges, 1), 0) / 2) i
                    WHERE x BETWEEN rs_ranges[2 * i - 1] AND rs_ranges[2 * i]);
  END IF;
  IF b IS NULL THEN RETURN true; END IF;
  FOR i IN 1 .. coalesce(array_length(rs_ranges, 1), 0) / 2 LOOP
    IF b BETWEEN rs_ranges[2 * i - 1] AND rs_ranges[2 * i] THEN RETURN true; END IF;
  END LOOP;
  RETURN false;
END $f$;
