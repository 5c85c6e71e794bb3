/* A fake libnvidia-ml.so.1: shared/research/ecosystem.md Appendix B, plus drivers that hang, crash and report odd
 * figures. Build: gcc -shared -fPIC -O2 -o libnvidia-ml.so.1 fake_nvml.c (tests/fake_nvml/__init__.py does it).
 *   FAKE_NVML_GPUS="name|total_MiB|used_MiB|reserved_MiB|mig(0,1; 2=not supported)[|free_MiB];..."
 *       free is total - used - reserved in unsigned arithmetic (used + reserved > total underflows, as a broken
 *       driver's does); a 6th field reports that free figure instead (free > total)
 *   FAKE_NVML_PROCS="gpu_index:pid:used_MiB;..."    FAKE_NVML_INIT_ERROR=9 (nvmlInit returns that code)
 *   FAKE_NVML_HANG=init|memory    sleep forever in nvmlInit / in the memory query (a hung driver)
 *   FAKE_NVML_CRASH=init|memory   SIGSEGV there (a driver that crashes)
 *   FAKE_NVML_PIDFILE=path        the process id is written there before it hangs or crashes */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
typedef int nvmlReturn_t;
enum { OK = 0, UNINIT = 1, INVALID_ARG = 2, NOT_SUPPORTED = 3, INSUFF = 7, DRIVER_NOT_LOADED = 9 };
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId, computeInstanceId; } nvmlProcessInfo_t;
#define MAXG 8
struct gpu { char name[96]; unsigned long long total, used, reserved, free; int has_free; unsigned int mig; };
static struct gpu gpus[MAXG]; static unsigned int ngpus; static int inited;
static const unsigned long long MiB = 1024ULL * 1024ULL;
static void misbehave(const char *where) {
    const char *hang = getenv("FAKE_NVML_HANG"), *crash = getenv("FAKE_NVML_CRASH"), *pidfile = getenv("FAKE_NVML_PIDFILE");
    int h = hang && !strcmp(hang, where), c = crash && !strcmp(crash, where);
    if ((h || c) && pidfile && *pidfile) { FILE *f = fopen(pidfile, "w"); if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); } }
    if (c) raise(SIGSEGV);
    while (h) sleep(1000);
}
static void load(void) {
    const char *s = getenv("FAKE_NVML_GPUS");
    if (!s || !*s) s = "NVIDIA GeForce RTX 4090|24564|1200|300|0";
    char *buf = strdup(s), *save = NULL; ngpus = 0;
    for (char *t = strtok_r(buf, ";", &save); t && ngpus < MAXG; t = strtok_r(NULL, ";", &save)) {
        struct gpu *g = &gpus[ngpus]; unsigned long long tt = 0, u = 0, r = 0, fr = 0; unsigned int m = 0; char name[96] = {0};
        int n = sscanf(t, "%95[^|]|%llu|%llu|%llu|%u|%llu", name, &tt, &u, &r, &m, &fr);
        if (n >= 2) {
            snprintf(g->name, sizeof g->name, "%s", name);
            g->total = tt * MiB; g->used = u * MiB; g->reserved = r * MiB; g->mig = m;
            g->has_free = n >= 6; g->free = fr * MiB; ngpus++; } }
    free(buf);
}
static unsigned long long free_of(const struct gpu *g) { return g->has_free ? g->free : g->total - g->used - g->reserved; }
nvmlReturn_t nvmlInitWithFlags(unsigned int f) {
    const char *e = getenv("FAKE_NVML_INIT_ERROR");
    (void)f;
    misbehave("init");
    if (e && *e) return atoi(e);
    load(); inited = 1; return OK; }
nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlShutdown(void) { if (!inited) return UNINIT; inited = 0; return OK; }
const char *nvmlErrorString(nvmlReturn_t r) { switch (r) { case OK: return "Success"; case UNINIT: return "Uninitialized";
    case INVALID_ARG: return "Invalid Argument"; case NOT_SUPPORTED: return "Not Supported"; case INSUFF: return "Insufficient Size";
    case DRIVER_NOT_LOADED: return "Driver Not Loaded"; default: return "Unknown Error"; } }
nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int n) { if (!inited) return UNINIT; snprintf(v, n, "575.51.03-fake"); return OK; }
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = 12090; return OK; }
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { *v = 12090; return OK; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *c) { if (!inited) return UNINIT; *c = ngpus; return OK; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h) {
    if (!inited) return UNINIT;
    if (i >= ngpus) return INVALID_ARG;
    *h = &gpus[i]; return OK; }
nvmlReturn_t nvmlDeviceGetName(void *h, char *n, unsigned int l) { snprintf(n, l, "%s", ((struct gpu *)h)->name); return OK; }
nvmlReturn_t nvmlDeviceGetUUID(void *h, char *u, unsigned int l) { snprintf(u, l, "GPU-fake-%04d", (int)((struct gpu *)h - gpus)); return OK; }
nvmlReturn_t nvmlDeviceGetMemoryInfo(void *h, nvmlMemory_t *m) {           /* v1: used includes reserved */
    struct gpu *g = h; misbehave("memory"); m->total = g->total; m->used = g->used + g->reserved; m->free = free_of(g); return OK; }
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(void *h, nvmlMemory_v2_t *m) {     /* v2: reserved separate */
    struct gpu *g = h; misbehave("memory"); if (m->version != (unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24))) return 25;
    m->total = g->total; m->reserved = g->reserved; m->used = g->used; m->free = free_of(g); return OK; }
nvmlReturn_t nvmlDeviceGetMigMode(void *h, unsigned int *cur, unsigned int *pend) {
    struct gpu *g = h; if (g->mig > 1) return NOT_SUPPORTED; *cur = *pend = g->mig; return OK; }
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(void *h, int *maj, int *min) { (void)h; *maj = 8; *min = 9; return OK; }
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned int *count, nvmlProcessInfo_t *infos) {
    unsigned int idx = (unsigned int)((struct gpu *)h - gpus), n = 0; const char *s = getenv("FAKE_NVML_PROCS"); nvmlProcessInfo_t tmp[32];
    if (s && *s) { char *buf = strdup(s), *save = NULL;
        for (char *t = strtok_r(buf, ";", &save); t && n < 32; t = strtok_r(NULL, ";", &save)) {
            unsigned int gi, pid; unsigned long long mib;
            if (sscanf(t, "%u:%u:%llu", &gi, &pid, &mib) == 3 && gi == idx) { tmp[n].pid = pid; tmp[n].usedGpuMemory = mib * MiB;
                tmp[n].gpuInstanceId = tmp[n].computeInstanceId = 0xFFFFFFFFu; n++; } }
        free(buf); }
    if (n == 0) { *count = 0; return OK; }
    if (!infos || *count < n) { *count = n; return INSUFF; }
    memcpy(infos, tmp, n * sizeof *tmp); *count = n; return OK;
}
