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

-- the prefix is reserved: misspelled settings are refused
SET simjoin.devise = 'cpu';

-- simjoin_devices() has the documented shape on every machine
SELECT count(*) >= 0 AS ok FROM simjoin_devices();
SELECT * FROM simjoin_devices() WHERE false;
