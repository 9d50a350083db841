"""The databases a config or command names: a storage or tracking URL whose driver (an extra of the package) is not
installed is refused before anything opens, with the command that installs it (`require_driver`), and the Optuna
storage must be such a URL (`require_database_url`); a SQLite store a
command only reads must exist (`missing_store`), since opening it would create it."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from sweep.errors import ConfigError

# What installs the driver SQLAlchemy picks for a bare `postgresql://` URL (psycopg 3 since SQLAlchemy 2.1).
POSTGRES_FIX = "pip install 'sweep[postgres]'"


def require_driver(key: str, url: str) -> None:
    """Refuse the database URL `url` of config key `key` when the driver SQLAlchemy would import for it is missing:
    one line naming the fix (the `postgres` extra for PostgreSQL). Other URLs (an MLflow server, a folder) pass."""
    try:
        dialect = make_url(url).get_dialect()
    except (ArgumentError, NoSuchModuleError, ValueError):  # not a SQLAlchemy database URL
        return
    try:
        dialect.import_dbapi()
    except ImportError as error:
        module = error.name or str(error)
        postgres = dialect.name == "postgresql" and module == "psycopg"
        fix = POSTGRES_FIX if postgres else f"install the package that provides {module}"
        raise ConfigError(key, url, f"its database driver ({module}) is not installed: {fix}") from None


def require_database_url(key: str, url: str) -> None:
    """`url` (of config key `key`) is a SQLAlchemy database URL, which Optuna's RDB storage opens (not a path)."""
    try:
        make_url(url)
    except (ArgumentError, ValueError):
        raise ConfigError(
            key, url, "must be a database URL: sqlite:///PATH (a file) or postgresql://USER@HOST/DATABASE"
        ) from None


def missing_store(tracking_uri: str | None) -> str | None:
    """Why ``tracking_uri`` (or ``$MLFLOW_TRACKING_URI``) names a SQLite store that does not exist, or None: reading
    it would create it, empty, and then find no study in it."""
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI", "")
    database = Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None
    if database is not None and not database.is_file():
        return f"tracking URI {uri}: no such database ({database}): give the one your study wrote"
    return None
