-- settings: names reserved, values checked (they exist once the library is loaded)
LOAD 'simjoin';
SHOW simjoin.enable_customscan;
SHOW simjoin.enable_shared_index;
SHOW simjoin.gpu_memory_limit;

SET simjoin.device = 'quantum';
SET simjoin.cpu_threads = 0;
SET simjoin.cpu_threads = 2;
SHOW simjoin.cpu_threads;
RESET simjoin.cpu_threads;
SET simjoin.gpu_memory_limit = '512MB';
SHOW simjoin.gpu_memory_limit;
RESET simjoin.gpu_memory_limit;
SET simjoin.gpu_memory_limit = -1;

-- simjoin.devices: all, or a list of device numbers (a number may repeat);
-- its default read from pg_settings, so that a run with the setting given
-- in PGOPTIONS (the multi-device path on one GPU) gives the same output
SELECT boot_val AS "simjoin.devices" FROM pg_settings WHERE name = 'simjoin.devices';
SET simjoin.devices = '0,1';
SHOW simjoin.devices;
SET simjoin.devices = 0, 0;
SHOW simjoin.devices;
SET simjoin.devices = 'ALL';
SET simjoin.devices = '0,x';
SET simjoin.devices = '-1';
SET simjoin.devices = '64';
SET simjoin.devices = '0,';
RESET simjoin.devices;

-- the prefix is reserved: misspelled settings are refused
SET simjoin.devise = 'cpu';

-- simjoin_devices() has the documented shape on every machine
SELECT count(*) >= 0 AS ok FROM simjoin_devices();
SELECT * FROM simjoin_devices() WHERE false;
