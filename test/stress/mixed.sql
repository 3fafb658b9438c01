\set q random(1, 10)
SELECT st_check(:q);
