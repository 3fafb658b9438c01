
-- Plain SQL joins call no simjoin function, so nothing loads the library
-- (and its planner hook) in a new session unless the server preloads it:
-- say so once, at CREATE EXTENSION, where it does not.
CREATE FUNCTION simjoin_check_preload() RETURNS bool
AS 'MODULE_PATHNAME', 'simjoin_check_preload'
LANGUAGE C VOLATILE;
SELECT simjoin_check_preload();
DROP FUNCTION simjoin_check_preload();
