"""Throwaway servers for demos, tests and benchmarks, never shipped: PostgreSQL, PgBouncer, a moto
S3 server, Celery workers, loopback ports, and `deploy_local`, which runs the production
configuration on them (`make demo-production`, `make dev-production`)."""
