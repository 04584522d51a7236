"""The store: SQLAlchemy models, the idempotent sink and queries. Alembic owns the schema."""
