-- Versioned SQL: an installation of 0.1 brought to the current version with
-- ALTER EXTENSION picoroute UPDATE must be exactly a fresh installation of the current version.
-- Both are made in databases of their own and described by the same catalog query; any line of
-- the description found on one side only is a difference, printed below as
-- (side, object, property, value). An empty difference means: same member objects, same function
-- signatures and attributes (volatility, strictness, security, parallel safety, cost, language,
-- settings), same definitions of functions and views, same columns, same privileges (current
-- and initial, as pg_dump sees them), same comments, same foreign data wrapper.
-- When this suite fails after you added or changed an SQL object: put the same change into the
-- update script src/sql/updates/picoroute--<previous>--<current>.sql.
\set regress_db :DBNAME

-- The update path from 0.1 to the current version exists.
SELECT source, target = (SELECT default_version FROM pg_available_extensions WHERE name = 'picoroute')
       AS target_is_current, path
FROM pg_extension_update_paths('picoroute')
WHERE source = '0.1' AND path IS NOT NULL
ORDER BY target;

-- The description: one row per (object, property, value), objects named by their identity.
SELECT $describe$
WITH ext AS (
    SELECT oid FROM pg_extension WHERE extname = 'picoroute'
), member AS (
    SELECT d.classid, d.objid, d.objsubid, o.type, o.identity
    FROM pg_depend d
    CROSS JOIN LATERAL pg_identify_object(d.classid, d.objid, d.objsubid) o
    WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = (SELECT oid FROM ext)
      AND d.deptype = 'e'
), property(object, property, value) AS (
    SELECT 'extension picoroute', 'version', extversion FROM pg_extension WHERE oid = (SELECT oid FROM ext)
    UNION ALL
    SELECT 'extension picoroute', 'schema, relocatable, config',
           format('%s, %s, %s %s', extnamespace::regnamespace, extrelocatable, extconfig::regclass[], extcondition)
    FROM pg_extension WHERE oid = (SELECT oid FROM ext)
    UNION ALL
    -- every member, whatever its kind (functions, views, types, casts, operators, schemas, ...)
    SELECT m.type || ' ' || m.identity, 'member', m.type FROM member m
    UNION ALL
    -- comments, on the members and on their columns
    SELECT o.type || ' ' || o.identity, 'comment', c.description
    FROM pg_description c
    JOIN member m ON m.classid = c.classoid AND m.objid = c.objoid
    CROSS JOIN LATERAL pg_identify_object(c.classoid, c.objoid, c.objsubid) o
    UNION ALL
    -- privileges as pg_dump records them for extension members
    SELECT o.type || ' ' || o.identity, 'initial privileges', ip.initprivs::text
    FROM pg_init_privs ip
    JOIN member m ON m.classid = ip.classoid AND m.objid = ip.objoid
    CROSS JOIN LATERAL pg_identify_object(ip.classoid, ip.objoid, ip.objsubid) o
    UNION ALL
    -- functions and procedures
    SELECT m.type || ' ' || m.identity, a.property, a.value
    FROM member m
    JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
    JOIN pg_language l ON l.oid = p.prolang
    CROSS JOIN LATERAL (VALUES
        ('arguments', pg_get_function_arguments(p.oid)),
        ('result', coalesce(pg_get_function_result(p.oid), '(none)')),
        ('kind', p.prokind::text),
        ('language', l.lanname::text),
        ('volatility', p.provolatile::text),
        ('strict', p.proisstrict::text),
        ('security definer', p.prosecdef::text),
        ('leakproof', p.proleakproof::text),
        ('parallel', p.proparallel::text),
        ('cost, rows', p.procost || ', ' || p.prorows),
        ('settings', coalesce(p.proconfig::text, '(none)')),
        ('privileges', coalesce(p.proacl::text, '(default)')),
        ('definition md5', CASE WHEN p.prokind = 'a' THEN md5(p.prosrc)
                                ELSE md5(pg_get_functiondef(p.oid)) END)
    ) a(property, value)
    UNION ALL
    -- tables, views, sequences, foreign tables, composite types
    SELECT m.type || ' ' || m.identity, a.property, a.value
    FROM member m
    JOIN pg_class r ON m.classid = 'pg_class'::regclass AND r.oid = m.objid
    CROSS JOIN LATERAL (VALUES
        ('kind', r.relkind::text),
        ('privileges', coalesce(r.relacl::text, '(default)')),
        ('options', coalesce(r.reloptions::text, '(none)')),
        ('definition md5', CASE WHEN r.relkind IN ('v', 'm') THEN md5(pg_get_viewdef(r.oid)) END)
    ) a(property, value)
    UNION ALL
    SELECT m.type || ' ' || m.identity, 'column ' || att.attnum || ' ' || att.attname,
           format_type(att.atttypid, att.atttypmod)
           || CASE WHEN att.attnotnull THEN ' not null' ELSE '' END
           || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), '')
           || coalesce(' privileges ' || att.attacl::text, '')
    FROM member m
    JOIN pg_attribute att ON m.classid = 'pg_class'::regclass AND att.attrelid = m.objid
    LEFT JOIN pg_attrdef ad ON ad.adrelid = att.attrelid AND ad.adnum = att.attnum
    WHERE att.attnum > 0 AND NOT att.attisdropped
    UNION ALL
    -- types created by the extension
    SELECT m.type || ' ' || m.identity, 'type', format('%s %s privileges %s', t.typtype, t.typcategory,
           coalesce(t.typacl::text, '(default)'))
           || coalesce(' labels ' || (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
                                      FROM pg_enum e WHERE e.enumtypid = t.oid), '')
    FROM member m
    JOIN pg_type t ON m.classid = 'pg_type'::regclass AND t.oid = m.objid
    UNION ALL
    -- foreign data wrappers and servers
    SELECT m.type || ' ' || m.identity, 'handler, validator, options, privileges',
           format('%s, %s, %s, %s', w.fdwhandler::regproc, w.fdwvalidator::regproc,
                  coalesce(w.fdwoptions::text, '(none)'),
                  coalesce(w.fdwacl::text, '(default)'))
    FROM member m
    JOIN pg_foreign_data_wrapper w ON m.classid = 'pg_foreign_data_wrapper'::regclass AND w.oid = m.objid
    UNION ALL
    SELECT m.type || ' ' || m.identity, 'options, privileges',
           format('%s, %s', coalesce(s.srvoptions::text, '(none)'), coalesce(s.srvacl::text, '(default)'))
    FROM member m
    JOIN pg_foreign_server s ON m.classid = 'pg_foreign_server'::regclass AND s.oid = m.objid
    UNION ALL
    SELECT m.type || ' ' || m.identity, 'privileges', coalesce(n.nspacl::text, '(default)')
    FROM member m
    JOIN pg_namespace n ON m.classid = 'pg_namespace'::regclass AND n.oid = m.objid
)
SELECT object, property, coalesce(value, '(null)') AS value FROM property
$describe$ AS describe_query \gset

-- A fresh installation of the current version.
CREATE DATABASE pr_upgrade_fresh;
\c pr_upgrade_fresh
SET client_min_messages = warning;
CREATE EXTENSION picoroute;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'picoroute')
       AS fresh_is_current
FROM pg_extension WHERE extname = 'picoroute';
SELECT string_agg(concat_ws(E'\t', object, property, replace(value, E'\n', '\n')), E'\n'
                  ORDER BY object, property, value) AS fresh_description
FROM (:describe_query) d \gset

-- An installation of 0.1, updated.
\c :regress_db
CREATE DATABASE pr_upgrade_updated;
\c pr_upgrade_updated
SET client_min_messages = warning;
CREATE EXTENSION picoroute VERSION '0.1';
ALTER EXTENSION picoroute UPDATE;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'picoroute')
       AS updated_is_current
FROM pg_extension WHERE extname = 'picoroute';
SELECT string_agg(concat_ws(E'\t', object, property, replace(value, E'\n', '\n')), E'\n'
                  ORDER BY object, property, value) AS updated_description
FROM (:describe_query) d \gset

-- The comparison. Both descriptions cover the extension: its functions, views and wrapper, their
-- comments and the privileges granted or revoked by the scripts.
CREATE TEMP TABLE described AS
SELECT side, split_part(line, E'\t', 1) AS object, split_part(line, E'\t', 2) AS property,
       split_part(line, E'\t', 3) AS value
FROM (SELECT 'fresh install' AS side, unnest(string_to_array(:'fresh_description', E'\n')) AS line
      UNION ALL
      SELECT 'updated from 0.1', unnest(string_to_array(:'updated_description', E'\n'))) l;
SELECT side,
       count(*) FILTER (WHERE object LIKE 'function %' AND property = 'member') > 0 AS has_functions,
       count(*) FILTER (WHERE object LIKE 'view %' AND property = 'member') > 0 AS has_views,
       count(*) FILTER (WHERE object LIKE 'foreign-data wrapper %' AND property = 'member') > 0 AS has_fdw,
       count(*) FILTER (WHERE property = 'comment') > 0 AS has_comments,
       count(*) FILTER (WHERE property = 'privileges' AND value <> '(default)') > 0 AS has_grants
FROM described GROUP BY side ORDER BY side;

-- Every difference between the two (none expected).
(SELECT 'only in a fresh install' AS difference, object, property, value
 FROM described WHERE side = 'fresh install'
 EXCEPT ALL
 SELECT 'only in a fresh install', object, property, value
 FROM described WHERE side = 'updated from 0.1')
UNION ALL
(SELECT 'only after the update from 0.1', object, property, value
 FROM described WHERE side = 'updated from 0.1'
 EXCEPT ALL
 SELECT 'only after the update from 0.1', object, property, value
 FROM described WHERE side = 'fresh install')
ORDER BY object, property, difference;

\c :regress_db
DROP DATABASE pr_upgrade_fresh WITH (FORCE);
DROP DATABASE pr_upgrade_updated WITH (FORCE);
