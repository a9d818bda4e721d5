#!/usr/bin/env python3
"""Checks META.json against the PGXN Meta Spec v1.0.0 and against the rest of the tree.

The spec (https://pgxn.org/spec/) rules checked here: the required keys (name, abstract, version,
maintainer, license, provides, meta-spec), the types and formats of every key the spec defines
(terms, SemVer versions, version ranges, license names, prerequisite phases and relations,
resources, no_index, tags, release_status), no unknown keys outside the custom x_ ones.

Consistency with the tree: the distribution is named after the extension, its version is the
extension's default_version (picoroute.control) with a patch level (0.2 -> 0.2.0) and the upstream
version of debian/changelog, the files it names exist, and its PostgreSQL prerequisite admits the
versions of debian/pgversions.

Usage: pgxn_meta_check.py [TREE]     (exit status 1 and one line per problem when invalid)
Python 3 standard library only.
"""
import json
import os
import re
import sys

SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
RANGE_PART = re.compile(r"^(==|!=|<=|>=|<|>)?\s*(.+)$")
TERM = re.compile(r"^[^/\\\s\x00-\x1f\x7f]{2,}$")
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
    "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
    "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay", "sun",
    "zlib", "open_source", "restricted", "unrestricted", "unknown",
}
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}
TOP_KEYS = {
    "name", "version", "abstract", "maintainer", "license", "provides", "meta-spec",
    "description", "generated_by", "tags", "no_index", "prereqs", "release_status", "resources",
}
REQUIRED = ["name", "version", "abstract", "maintainer", "license", "provides", "meta-spec"]
URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:\S+$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")

problems = []


def bad(where, what):
    problems.append(f"{where}: {what}")


def custom(key):
    return re.match(r"^[xX]_.", key) is not None


def nonempty_string(where, value):
    if not isinstance(value, str) or not value:
        bad(where, "must be a non-empty string")
        return False
    return True


def check_version_range(where, value):
    if value == 0 or value == "0":
        return
    if not isinstance(value, str):
        bad(where, "must be a version range string or 0")
        return
    for part in value.split(","):
        m = RANGE_PART.match(part.strip())
        if not m or not SEMVER.match(m.group(2).strip()):
            bad(where, f"'{part.strip()}' is not a SemVer version with an optional operator")


def check_keys(where, obj, allowed):
    for key in obj:
        if key not in allowed and not custom(key):
            bad(where, f"unknown key '{key}'")


def check_meta(meta, tree):
    if not isinstance(meta, dict):
        bad("META.json", "must be a JSON object")
        return
    for key in REQUIRED:
        if key not in meta:
            bad("META.json", f"required key '{key}' is missing")
    check_keys("META.json", meta, TOP_KEYS)

    if "name" in meta and (not isinstance(meta["name"], str) or not TERM.match(meta["name"])):
        bad("name", "must be a term (2+ characters, no slash, backslash, space or control)")
    if "version" in meta and (not isinstance(meta["version"], str) or not SEMVER.match(meta["version"])):
        bad("version", "must be a SemVer version (e.g. 1.2.0)")
    if "abstract" in meta:
        nonempty_string("abstract", meta["abstract"])
    for key in ("description", "generated_by"):
        if key in meta:
            nonempty_string(key, meta[key])

    maintainer = meta.get("maintainer")
    if isinstance(maintainer, list):
        if not maintainer or len(set(maintainer)) != len(maintainer):
            bad("maintainer", "a list must be non-empty and unique")
        for i, m in enumerate(maintainer):
            nonempty_string(f"maintainer[{i}]", m)
    elif maintainer is not None:
        nonempty_string("maintainer", maintainer)

    lic = meta.get("license")
    if isinstance(lic, str):
        if lic not in LICENSES:
            bad("license", f"'{lic}' is not a license name of the spec")
    elif isinstance(lic, list):
        if not lic or len(set(lic)) != len(lic) or any(x not in LICENSES for x in lic):
            bad("license", "a list must be non-empty, unique, of license names of the spec")
    elif isinstance(lic, dict):
        if not lic or any(not isinstance(u, str) or not URI.match(u) for u in lic.values()):
            bad("license", "an object must map license names to URIs")
    elif lic is not None:
        bad("license", "must be a license name, a list of them or an object of name -> URI")

    provides = meta.get("provides")
    if provides is not None:
        if not isinstance(provides, dict) or not provides:
            bad("provides", "must be a non-empty object")
        else:
            for ext, spec in provides.items():
                where = f"provides.{ext}"
                if not TERM.match(ext):
                    bad(where, "extension name must be a term")
                if not isinstance(spec, dict):
                    bad(where, "must be an object")
                    continue
                check_keys(where, spec, {"file", "version", "abstract", "docfile", "docpath"})
                for key in ("file", "version"):
                    if key not in spec:
                        bad(where, f"required key '{key}' is missing")
                if "version" in spec and (not isinstance(spec["version"], str) or not SEMVER.match(spec["version"])):
                    bad(f"{where}.version", "must be a SemVer version")
                for key in ("file", "docfile"):
                    if key in spec:
                        path = spec[key]
                        if not isinstance(path, str) or len(path) < 2 or path.startswith("/") or "\\" in path:
                            bad(f"{where}.{key}", "must be a relative Unix path")
                        elif not os.path.isfile(os.path.join(tree, path)):
                            bad(f"{where}.{key}", f"'{path}' is not a file of the distribution")
                for key in ("abstract", "docpath"):
                    if key in spec:
                        nonempty_string(f"{where}.{key}", spec[key])

    spec = meta.get("meta-spec")
    if spec is not None:
        if not isinstance(spec, dict):
            bad("meta-spec", "must be an object")
        else:
            check_keys("meta-spec", spec, {"version", "url"})
            if not isinstance(spec.get("version"), str) or not re.match(r"^1\.0\.\d+$", spec["version"]):
                bad("meta-spec.version", "must be 1.0.x")
            if "url" in spec and spec["url"] not in ("https://pgxn.org/meta/spec.txt", "http://pgxn.org/meta/spec.txt"):
                bad("meta-spec.url", "must be the spec's URL")

    prereqs = meta.get("prereqs")
    if prereqs is not None:
        if not isinstance(prereqs, dict) or not prereqs:
            bad("prereqs", "must be an object with at least one phase")
        else:
            check_keys("prereqs", prereqs, PHASES)
            for phase, rels in prereqs.items():
                if phase not in PHASES:
                    continue
                if not isinstance(rels, dict) or not rels:
                    bad(f"prereqs.{phase}", "must be an object with at least one relation")
                    continue
                check_keys(f"prereqs.{phase}", rels, RELATIONS)
                for rel, deps in rels.items():
                    if rel not in RELATIONS:
                        continue
                    if not isinstance(deps, dict) or not deps:
                        bad(f"prereqs.{phase}.{rel}", "must be a non-empty object")
                        continue
                    for name, rng in deps.items():
                        if not TERM.match(name):
                            bad(f"prereqs.{phase}.{rel}", f"'{name}' is not a term")
                        check_version_range(f"prereqs.{phase}.{rel}.{name}", rng)

    if "release_status" in meta and meta["release_status"] not in ("stable", "testing", "unstable"):
        bad("release_status", "must be stable, testing or unstable")

    tags = meta.get("tags")
    if tags is not None:
        if not isinstance(tags, list) or not tags or len(set(tags)) != len(tags):
            bad("tags", "must be a non-empty list of unique tags")
        else:
            for t in tags:
                if not isinstance(t, str) or not 2 <= len(t) <= 255 or re.search(r"[/\\\x00-\x1f\x7f]", t):
                    bad("tags", f"'{t}' is not a valid tag")

    no_index = meta.get("no_index")
    if no_index is not None:
        if not isinstance(no_index, dict) or not ({"file", "directory"} & set(no_index)):
            bad("no_index", "must have 'file' or 'directory'")
        else:
            check_keys("no_index", no_index, {"file", "directory"})
            for key in ("file", "directory"):
                value = no_index.get(key)
                if value is None:
                    continue
                values = value if isinstance(value, list) else [value]
                if not values or any(not isinstance(v, str) or len(v) < 2 for v in values):
                    bad(f"no_index.{key}", "must be a path or a non-empty list of paths")

    resources = meta.get("resources")
    if resources is not None:
        if not isinstance(resources, dict) or not ({"homepage", "bugtracker", "repository"} & set(resources)):
            bad("resources", "must have homepage, bugtracker or repository")
        else:
            check_keys("resources", resources, {"homepage", "bugtracker", "repository"})
            if "homepage" in resources and not URI.match(str(resources["homepage"])):
                bad("resources.homepage", "must be a URI")
            bt = resources.get("bugtracker")
            if bt is not None:
                if not isinstance(bt, dict) or not ({"web", "mailto"} & set(bt)):
                    bad("resources.bugtracker", "must have web or mailto")
                else:
                    check_keys("resources.bugtracker", bt, {"web", "mailto"})
                    if "web" in bt and not URI.match(str(bt["web"])):
                        bad("resources.bugtracker.web", "must be a URI")
                    if "mailto" in bt and not EMAIL.match(str(bt["mailto"])):
                        bad("resources.bugtracker.mailto", "must be an email address")
            repo = resources.get("repository")
            if repo is not None:
                if not isinstance(repo, dict) or not ({"url", "type"} <= set(repo) or "web" in repo):
                    bad("resources.repository", "must have url and type, or web")
                else:
                    check_keys("resources.repository", repo, {"url", "web", "type"})
                    for key in ("url", "web"):
                        if key in repo and not URI.match(str(repo[key])):
                            bad(f"resources.repository.{key}", "must be a URI")
                    if "type" in repo and not re.match(r"^[a-z]+$", str(repo["type"])):
                        bad("resources.repository.type", "must be lower-case letters")


def control_value(tree, key):
    with open(os.path.join(tree, "picoroute.control")) as f:
        for line in f:
            m = re.match(rf"^\s*{key}\s*=\s*'([^']*)'", line)
            if m:
                return m.group(1)
    return None


def admits(rng, major):
    """Whether a version range admits PostgreSQL `major`.0.0 (the operators of the spec)."""
    if rng in (0, "0"):
        return True
    version = (major, 0, 0)
    for part in str(rng).split(","):
        m = RANGE_PART.match(part.strip())
        op, v = m.group(1) or ">=", tuple(int(x) for x in SEMVER.match(m.group(2).strip()).groups()[:3])
        ok = {"==": version == v, "!=": version != v, "<": version < v, "<=": version <= v,
              ">": version > v, ">=": version >= v}[op]
        if not ok:
            return False
    return True


def check_tree(meta, tree):
    name = meta.get("name")
    if control_value(tree, "default_version") is None:
        bad("picoroute.control", "no default_version")
        return
    ext_version = control_value(tree, "default_version")
    expected = ext_version if ext_version.count(".") == 2 else ext_version + ".0"
    if name != "picoroute":
        bad("name", "must be the extension's name, picoroute")
    if meta.get("version") != expected:
        bad("version", f"'{meta.get('version')}' does not match default_version '{ext_version}' of picoroute.control (expected '{expected}')")
    provided = meta.get("provides", {}).get("picoroute", {})
    if provided.get("version") != expected:
        bad("provides.picoroute.version", f"'{provided.get('version')}' does not match '{expected}'")
    changelog = os.path.join(tree, "debian", "changelog")
    if os.path.isfile(changelog):
        with open(changelog) as f:
            m = re.match(r"^\S+ \(([^)]+)\)", f.readline())
        upstream = m.group(1).split(":")[-1].rsplit("-", 1)[0] if m else None
        if upstream != expected:
            bad("debian/changelog", f"upstream version '{upstream}' does not match '{expected}'")
    pgversions = os.path.join(tree, "debian", "pgversions")
    rng = meta.get("prereqs", {}).get("runtime", {}).get("requires", {}).get("PostgreSQL")
    if rng is None:
        bad("prereqs.runtime.requires", "must name PostgreSQL")
    elif os.path.isfile(pgversions):
        with open(pgversions) as f:
            majors = [int(l.strip()) for l in f if re.match(r"^\s*\d+\s*$", l)]
        for major in majors:
            if not admits(rng, major):
                bad("prereqs.runtime.requires.PostgreSQL", f"'{rng}' excludes PostgreSQL {major} of debian/pgversions")


def main():
    tree = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    try:
        with open(os.path.join(tree, "META.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        print(f"META.json: {e}")
        return 1
    check_meta(meta, tree)
    if not problems:
        check_tree(meta, tree)
    for p in problems:
        print(f"META.json invalid: {p}")
    if problems:
        return 1
    print(f"META.json: valid PGXN Meta Spec 1.0.0, {meta['name']} {meta['version']}, consistent with the tree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
