\set q random(11, 14)
SELECT st_check(:q);
