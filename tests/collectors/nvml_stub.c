/* A stand-in for libnvidia-ml.so.1 that answers from recorded nvidia-smi output.
 *
 * Built by tests/collectors/nvml_stub.py with `cc -shared -DSTUB_DATA='"FILE"'`: FILE holds one
 * fact a line, `KEY<TAB>VALUE`, written by nvml_stub.py from a recording (device keys are
 * `N.KEY`). The functions below have the names and signatures of NVIDIA's public nvml.h; each
 * answers NVML_SUCCESS with the recorded value, or NVML_ERROR_NOT_SUPPORTED when the recording
 * has none (nvidia-smi's "[N/A]"). Without FILE, nvmlInit_v2 answers
 * NVML_ERROR_DRIVER_NOT_LOADED, as the real library does on a machine whose driver is not loaded.
 * -DWITHOUT_COMPUTE_CAP leaves nvmlDeviceGetCudaComputeCapability out, as libraries before it
 * existed lack it. Nothing here is a value: every value comes from FILE.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef int nvmlEnableState_t;
typedef int nvmlClockType_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;
typedef struct nvmlPciInfo_st {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9

#define MAX_FACTS 256
static char keys[MAX_FACTS][64];
static char values[MAX_FACTS][128];
static int nfacts = 0;
static int inits = 0;

static const char *fact(int device, const char *key) {
    char full[64];
    if (device >= 0)
        snprintf(full, sizeof full, "%d.%s", device, key);
    else
        snprintf(full, sizeof full, "%s", key);
    for (int i = 0; i < nfacts; i++)
        if (strcmp(keys[i], full) == 0)
            return values[i];
    return NULL;
}

static int index_of(nvmlDevice_t device) { return (int)(intptr_t)device - 1; }

nvmlReturn_t nvmlInit_v2(void) {
    FILE *f = fopen(STUB_DATA, "r");
    char line[256];
    if (f == NULL)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    nfacts = 0;
    while (nfacts < MAX_FACTS && fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (tab == NULL)
            continue;
        *tab = '\0';
        tab[1 + strcspn(tab + 1, "\n")] = '\0';
        snprintf(keys[nfacts], sizeof keys[0], "%s", line);
        snprintf(values[nfacts], sizeof values[0], "%s", tab + 1);
        nfacts++;
    }
    fclose(f);
    inits++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    if (inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    inits--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
    }
}

static nvmlReturn_t copy_text(const char *value, char *out, unsigned int length) {
    if (value == NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    if (strlen(value) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(out, value);
    return NVML_SUCCESS;
}

static nvmlReturn_t unsigned_fact(int device, const char *key, int field, unsigned int *out) {
    const char *value = fact(device, key);
    unsigned int parts[2];
    if (inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (value == NULL || sscanf(value, "%u %u", &parts[0], &parts[1]) < field + 1)
        return NVML_ERROR_NOT_SUPPORTED;
    *out = parts[field];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    return copy_text(fact(-1, "driver"), version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) {
    return unsigned_fact(-1, "cuda", 0, (unsigned int *)cudaDriverVersion);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    return unsigned_fact(-1, "count", 0, deviceCount);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    unsigned int count;
    if (unsigned_fact(-1, "count", 0, &count) != NVML_SUCCESS || index >= count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = (nvmlDevice_t)(intptr_t)(index + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    return copy_text(fact(index_of(device), "name"), name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    return copy_text(fact(index_of(device), "uuid"), uuid, length);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    const char *value = fact(index_of(device), "memory_total");
    if (value == NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    memset(memory, 0, sizeof *memory);
    memory->total = strtoull(value, NULL, 10);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    const char *value = fact(index_of(device), "bus_id");
    if (value == NULL)
        return NVML_ERROR_NOT_SUPPORTED;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%s", value);
    return NVML_SUCCESS;
}

#ifndef WITHOUT_COMPUTE_CAP
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    unsigned int a, b;
    if (unsigned_fact(index_of(device), "cc", 0, &a) || unsigned_fact(index_of(device), "cc", 1, &b))
        return NVML_ERROR_NOT_SUPPORTED;
    *major = (int)a;
    *minor = (int)b;
    return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode) {
    return unsigned_fact(index_of(device), "persistence", 0, (unsigned int *)mode);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                  unsigned int *pendingMode) {
    nvmlReturn_t rc = unsigned_fact(index_of(device), "mig", 0, currentMode);
    return rc ? rc : unsigned_fact(index_of(device), "mig", 1, pendingMode);
}

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current,
                                  nvmlEnableState_t *pending) {
    nvmlReturn_t rc = unsigned_fact(index_of(device), "ecc", 0, (unsigned int *)current);
    return rc ? rc : unsigned_fact(index_of(device), "ecc", 1, (unsigned int *)pending);
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit) {
    return unsigned_fact(index_of(device), "power_limit_mw", 0, limit);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                       unsigned int *clock) {
    char key[32];
    snprintf(key, sizeof key, "max_clock.%d", type);
    return unsigned_fact(index_of(device), key, 0, clock);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *maxLinkGen) {
    return unsigned_fact(index_of(device), "pcie_gen_max", 0, maxLinkGen);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *maxLinkWidth) {
    return unsigned_fact(index_of(device), "pcie_width_max", 0, maxLinkWidth);
}
