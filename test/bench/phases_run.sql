-- phases_run.sql: one configuration of phases.sql: EXPLAIN ANALYZE of the
-- band and eps joins, then three timed runs of each.
EXPLAIN (ANALYZE, COSTS OFF) EXECUTE band;
EXPLAIN (ANALYZE, COSTS OFF) EXECUTE eps;
\timing on
EXECUTE band; EXECUTE band; EXECUTE band;
EXECUTE eps; EXECUTE eps; EXECUTE eps;
\timing off
