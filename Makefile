# simjoin: GPU similarity and theta joins for PostgreSQL.
#
#   make                 build (with the GPU engine when nvcc is found)
#   make install         install into the PostgreSQL that pg_config names
#   make installcheck    pg_regress suite against a running server
#   make engine-check    engine tests, no server needed
#
# Settings: PG_CONFIG, NVCC (empty to force a CPU-only build), CUDA_HOME,
# CUDA_ARCH (nvcc -gencode flags).

EXTENSION = simjoin
MODULE_big = simjoin
EXTVERSION = 0.1

DATA_built = $(EXTENSION)--$(EXTVERSION).sql
SQL_PARTS = $(sort $(wildcard src/sql/*.sql))

ENGINE_SRCS = $(sort $(wildcard src/engine/*.c))
ADAPTER_SRCS = $(sort $(wildcard src/*.c))
ENGINE_OBJS = $(ENGINE_SRCS:.c=.o)

REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=. --dbname=contrib_regression

# --- CUDA detection ---------------------------------------------------------
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
# sm_90a is Hopper's sm_90 with its own instructions (the wgmma filter of
# the high-dimensional eps_join); PTX for later devices.
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_90a,code=sm_90a \
             -gencode arch=compute_90,code=compute_90

CU_SRCS = $(sort $(wildcard cuda/*.cu))
ifneq ($(strip $(NVCC)),)
CUDA_LIBDIR := $(firstword $(wildcard $(dir $(NVCC))../lib64 $(CUDA_HOME)/lib64))
GPU_OBJS = $(CU_SRCS:.cu=.o)
# The CUDA runtime is linked statically so the library loads on machines
# with no NVIDIA driver; the driver itself is opened at run time.
GPU_LIBS = -L$(CUDA_LIBDIR) -lcudart_static -lstdc++ -ldl -lrt
BUILD_KIND = GPU (nvcc $(shell $(NVCC) --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))
else
GPU_OBJS = cuda/sjgpu_none.o
GPU_LIBS =
BUILD_KIND = CPU-only (nvcc not found)
endif

# GPU objects stay out of OBJS: PGXS makes LLVM bitcode for every object in
# OBJS, and nvcc output has no bitcode.  They are linked through SHLIB_LINK.
OBJS = $(ADAPTER_SRCS:.c=.o) $(ENGINE_OBJS)
SHLIB_LINK = $(GPU_OBJS) $(GPU_LIBS) -lpthread -lm

# Bit-identical distances need the same operation order on CPU and GPU:
# no contraction into fused multiply-add anywhere.
PG_CPPFLAGS = -Isrc -Isrc/engine -Icuda
PG_CFLAGS = -std=gnu11 -ffp-contract=off -pthread -Wall -Wextra -Wno-unused-parameter \
            -Wno-missing-field-initializers -Wno-sign-compare

NVCC_FLAGS = -O3 -std=c++17 $(CUDA_ARCH) -fmad=false -Xcompiler -fPIC,-Wall \
             -Isrc/engine -Icuda --expt-relaxed-constexpr

EXTRA_CLEAN = $(GPU_OBJS) cuda/*.o test/engine/*.o test/engine/engine_test test/multi/multi_check \
              results regression.diffs regression.out

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# clang is only needed for JIT bitcode; skip that step where it is missing
ifeq ($(wildcard $(CLANG)),)
with_llvm = no
endif

$(EXTENSION)--$(EXTVERSION).sql: $(SQL_PARTS)
	cat $^ > $@

cuda/%.o: cuda/%.cu cuda/sjgpu.h $(wildcard src/engine/*.h) $(wildcard cuda/*.cuh)
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@

cuda/sjgpu_none.o: cuda/sjgpu_none.c cuda/sjgpu.h src/engine/sjengine.h
	$(CC) $(CFLAGS) $(PG_CFLAGS) -fPIC -Isrc/engine -Icuda -c $< -o $@

$(shlib): $(GPU_OBJS)

# The headers every object depends on (PGXS tracks none without
# --enable-depend): a changed struct must rebuild all who use it.
$(ENGINE_OBJS) $(ENGINE_SRCS:.c=.bc): $(wildcard src/engine/*.h)
$(ADAPTER_SRCS:.c=.o) $(ADAPTER_SRCS:.c=.bc): $(wildcard src/*.h src/engine/*.h) cuda/sjgpu.h

all: build-kind
.PHONY: build-kind engine-check multi-check
build-kind:
	@echo "simjoin: $(BUILD_KIND) build"

# Engine tests: the engines without a server (GPU too, where one is usable).
ENGINE_TEST_SRCS = $(sort $(wildcard test/engine/*.c))
test/engine/engine_test: $(ENGINE_TEST_SRCS) $(wildcard test/engine/*.h) $(ENGINE_OBJS) $(GPU_OBJS)
	$(CC) -O2 -std=gnu11 -ffp-contract=off -pthread -Wall -Isrc/engine -Icuda \
		-o $@ $(ENGINE_TEST_SRCS) $(ENGINE_OBJS) $(GPU_OBJS) $(GPU_LIBS) -lpthread -lm

engine-check: test/engine/engine_test
	test/engine/engine_test

# The multi-device driver with a fake operator: host only, nvcc but no GPU.
test/multi/multi_check: test/multi/multi_check.cu cuda/sjgpu_multi.cu $(wildcard cuda/*.cuh) cuda/sjgpu.h
	$(NVCC) -std=c++17 -O1 -Isrc/engine -Icuda -o $@ test/multi/multi_check.cu cuda/sjgpu_multi.cu -lpthread

multi-check: test/multi/multi_check
	test/multi/multi_check
