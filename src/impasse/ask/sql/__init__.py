"""Text-to-SQL ask tasks over real data in SQLite: database builder, tools, scorer, validation."""
