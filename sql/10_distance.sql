-- l2_distance and <-> on float8[] and float4[]
SELECT l2_distance('{0,0}'::float8[], '{3,4}'::float8[]);
SELECT '{0,0}'::float8[] <-> '{3,4}'::float8[];
SELECT l2_distance('{1,2,3}'::float4[], '{1,2,3}'::float4[]);
SELECT '{1.5,-2}'::float4[] <-> '{0.5,-2}'::float4[];
SELECT l2_distance('{1e300,0}'::float8[], '{-1e300,0}'::float8[]);   -- overflows to infinity
SELECT l2_distance('{NaN}'::float8[], '{1}'::float8[]);
SELECT l2_distance('{1}'::float8[], NULL);
-- float4 is widened to double before subtracting
SELECT l2_distance('{0.1}'::float4[], '{0}'::float4[]) = 0.1::float4::float8 AS widened;
-- commutes exactly
SELECT l2_distance('{0.1,0.7,-3.3}'::float8[], '{2.9,1e-3,5}'::float8[])
     = l2_distance('{2.9,1e-3,5}'::float8[], '{0.1,0.7,-3.3}'::float8[]) AS symmetric;
-- agrees with cube's Euclidean distance
SELECT l2_distance('{1,2,3,4}'::float8[], '{4,3,2,1}'::float8[])
     = cube_distance(cube('{1,2,3,4}'::float8[]), cube('{4,3,2,1}'::float8[])) AS same_as_cube;

-- bad vectors
SELECT sj_err($$SELECT l2_distance('{1,2}'::float8[], '{1,2,3}'::float8[])$$);
SELECT sj_err($$SELECT l2_distance('{1,NULL}'::float8[], '{1,2}'::float8[])$$);
SELECT sj_err($$SELECT l2_distance('{{1,2},{3,4}}'::float8[], '{1,2}'::float8[])$$);
SELECT sj_err($$SELECT l2_distance('{}'::float8[], '{}'::float8[])$$);
SELECT sj_err($$SELECT '{1}'::float4[] <-> '{1,2}'::float4[]$$);
