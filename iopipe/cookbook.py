"""The SQL cookbook: each `*.sql` in schema/queries/ is one question SREs ask, documented at its top.

Parameters are written as modern ClickHouse query parameters, `{name:Type}`, so on a
current server they run as they are (`clickhouse-client --param_host=web-17 ...`).
`render` substitutes them as typed literals for servers and clients that predate query
parameters (18.16), and can point the queries at a database other than `iopipe`.

    python3 -m iopipe.cookbook NAME [name=value ...]     prints NAME rendered, ready to paste
"""
import re
import sys

from iopipe.paths import SCHEMA

QUERIES_DIR = SCHEMA / "queries"
PARAMETER = re.compile(r"\{([a-z_]+):([A-Za-z0-9]+)\}")
DATABASE = re.compile(r"\biopipe\.")


def names():
    return sorted(p.stem for p in QUERIES_DIR.glob("*.sql"))


def text(name):
    path = QUERIES_DIR / f"{name}.sql"
    if not path.exists():
        raise KeyError(f"no cookbook query {name!r}; there are: {', '.join(names())}")
    return path.read_text()


def parameters(name):
    """{name: type} of the parameters the query takes."""
    return dict(PARAMETER.findall(text(name)))


def literal(value, type_name):
    if re.fullmatch(r"U?Int\d+", type_name):
        return str(int(value))  # a bare number: 18.16 takes nothing else after LIMIT
    escaped = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"CAST('{escaped}' AS {type_name})"


def render(name, params, db="iopipe"):
    """The query with its parameters as typed literals; every parameter must be given."""
    missing = set(parameters(name)) - set(params)
    if missing:
        raise KeyError(f"{name} needs {', '.join(sorted(missing))}")
    sql = PARAMETER.sub(lambda m: literal(params[m[1]], m[2]), text(name))
    return DATABASE.sub(f"{db}.", sql)


def main(argv):
    if not argv:
        sys.exit(__doc__ + "\nqueries: " + ", ".join(names()))
    params = dict(arg.split("=", 1) for arg in argv[1:])
    print(render(argv[0], params))


if __name__ == "__main__":
    main(sys.argv[1:])
