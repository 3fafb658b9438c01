-- jaccard() and the tokenizers
SELECT jaccard('{1,2,3}'::int4[], '{2,3,4}'::int4[]);          -- 2/4
SELECT jaccard('{1,1,2,2}'::int4[], '{2,1}'::int4[]);          -- duplicates ignored: 1
SELECT jaccard('{1,2}'::int8[], '{3}'::int8[]);                -- 0
SELECT jaccard('{}'::int4[], '{}'::int4[]);                    -- empty is similar to nothing
SELECT jaccard('{}'::int4[], '{1}'::int4[]);
SELECT jaccard('{9000000000,1}'::int8[], '{9000000000}'::int8[]);
SELECT jaccard('{a,b,c}'::text[], '{B,c,d}'::text[]);          -- case matters: 1/5
SELECT jaccard('{{1,2},{3,4}}'::int4[], '{1,2,3,4,5}'::int4[]); -- any shape: 4/5
SELECT jaccard('{1,2,3,4,5,6,7}'::int4[], '{1,2,3,4,5,6,7,8,9,10}'::int4[]) = 0.7 AS exactly_seven_tenths;
SELECT jaccard('{1}'::int4[], NULL);
SELECT sj_err($$SELECT jaccard('{1,NULL}'::int4[], '{1}'::int4[])$$);
SELECT sj_err($$SELECT jaccard('{a}'::text[], '{NULL}'::text[])$$);

SELECT simjoin_words('Hello, World! hello-again 42nd Street');
SELECT simjoin_words('');
SELECT simjoin_words('... ---');
SELECT simjoin_qgrams('Cat');
SELECT simjoin_qgrams('ab cd', 2);
SELECT simjoin_qgrams('Ab', 1);
SELECT simjoin_qgrams('x', 5);
SELECT sj_err($$SELECT simjoin_qgrams('abc', 0)$$);
SELECT sj_err($$SELECT simjoin_qgrams('abc', 65)$$);
-- trigrams as pg_trgm makes them
CREATE EXTENSION pg_trgm;
SELECT array(SELECT unnest(simjoin_qgrams('The quick brown fox')) ORDER BY 1)
     = array(SELECT unnest(show_trgm('The quick brown fox')) ORDER BY 1) AS same_as_pg_trgm;
SELECT jaccard(simjoin_qgrams('PostgreSQL rocks'), simjoin_qgrams('postgres rock'))::numeric(10, 6)
     = similarity('PostgreSQL rocks', 'postgres rock')::numeric(10, 6) AS same_similarity;
