"""Operations on the warehouse targets of SQL tasks: lineage, rehash, upgrading identity columns, and
the check that a DuckDB warehouse file did not vanish."""
