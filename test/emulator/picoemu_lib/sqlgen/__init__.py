"""SQL the emulator runs on its servers: the static schema of an instance (Picodata's catalog tables,
the hash functions, strict-mode helpers: catalog.static_schema_sql), the catalog generated from the
state (catalog), the columns of user tables (columns) and the per-replicaset objects of sharded
tables (storage, postgres_fdw foreign tables, views, triggers: topology).

The functions, triggers and catalog views are written in SQL files under test/emulator/sql (see
text.sql_file for their placeholders); what depends on the state (views over the bucket ranges,
foreign tables, rows) is generated here. Pure: nothing here talks to a server.
"""
