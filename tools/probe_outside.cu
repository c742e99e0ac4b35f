// What a process outside the worker can see of the worker's use of the GPU (issue 37, "from outside"):
// NVML's per-process device memory (nvmlDeviceGetComputeRunningProcesses) for a child process that
// allocates and frees device memory, and the child's CPU time while it waits for a kernel.
//
//   nvcc -O2 -o probe_outside tools/probe_outside.cu -lcuda -ldl && ./probe_outside [--wrap PROGRAM ARGS...]
//
// With --wrap the child runs as `PROGRAM ARGS... <this binary> --child` (e.g. bubblewrap with a pid
// namespace), to see whether NVML still names the child's pid as this process sees it.
// Prints one line per step: what the child did, NVML's view of its pid (MiB), and all pids NVML lists.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// the few NVML entry points used, declared by hand (no nvml.h needed); the layout is nvmlProcessInfo_v2/_v3
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
using Init = int (*)();
using HandleByIndex = int (*)(unsigned int, void**);
using Processes = int (*)(void*, unsigned int*, ProcessInfo*);

struct Nvml {
  Init init = nullptr;
  HandleByIndex handle = nullptr;
  Processes processes = nullptr;
  void* device = nullptr;
  bool ok = false;

  Nvml() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!lib) return;
    init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
    handle = reinterpret_cast<HandleByIndex>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    processes = reinterpret_cast<Processes>(dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
    if (!processes) processes = reinterpret_cast<Processes>(dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2"));
    ok = init && handle && processes && init() == 0 && handle(0, &device) == 0;
  }

  std::vector<ProcessInfo> list() const {
    std::vector<ProcessInfo> out(64);
    unsigned int count = static_cast<unsigned int>(out.size());
    if (!ok || processes(device, &count, out.data()) != 0) return {};
    out.resize(count);
    return out;
  }
};

void command(int fd, const char* text) {
  if (write(fd, text, std::strlen(text)) < 0) std::perror("write");
}

std::string reply(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

double cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

// the child: reads one command a line from stdin, answers one line on stdout
int child() {
  cudaFree(nullptr);
  std::printf("ready pid=%d\n", getpid());
  std::fflush(stdout);
  std::vector<void*> held;
  char op;
  long arg;
  while (std::scanf(" %c %ld", &op, &arg) == 2) {
    std::string said = "ok";
    if (op == 'm') {  // cudaMalloc arg MiB, kept
      void* p = nullptr;
      cudaMalloc(&p, static_cast<std::size_t>(arg) << 20);
      held.push_back(p);
    } else if (op == 'f') {  // cudaFree all kept
      for (void* p : held) cudaFree(p);
      held.clear();
    } else if (op == 'a') {  // cudaMallocAsync arg MiB, cudaFreeAsync, synchronize (the pool's memory)
      void* p = nullptr;
      cudaMallocAsync(&p, static_cast<std::size_t>(arg) << 20, nullptr);
      cudaFreeAsync(p, nullptr);
      cudaStreamSynchronize(nullptr);
    } else if (op == 's') {  // a kernel of about arg ms waited for with cudaDeviceSynchronize: CPU time
      const double before = cpu_ms();
      const auto t0 = std::chrono::steady_clock::now();
      spin<<<1, 1>>>(arg * 1980000LL);  // ~1.98 GHz
      cudaDeviceSynchronize();
      const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      char buf[128];
      std::snprintf(buf, sizeof buf, "wall %.1f ms, cpu %.1f ms", wall, cpu_ms() - before);
      said = buf;
    } else if (op == 't') {  // arg small cudaMalloc's of 4 KiB, kept (freed by 'f')
      for (long i = 0; i < arg; ++i) {
        void* p = nullptr;
        cudaMalloc(&p, 4096);
        held.push_back(p);
      }
    } else if (op == 'k') {  // the default pool keeps what is freed (release threshold: all), 512 MiB
      cudaMemPool_t pool;
      cudaDeviceGetDefaultMemPool(&pool, 0);
      unsigned long long all = ~0ull;
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &all);
      void* p = nullptr;
      cudaMallocAsync(&p, static_cast<std::size_t>(arg) << 20, nullptr);
      cudaFreeAsync(p, nullptr);
      cudaStreamSynchronize(nullptr);
    } else if (op == 'r') {  // trim the default pool
      cudaMemPool_t pool;
      cudaDeviceGetDefaultMemPool(&pool, 0);
      cudaMemPoolTrimTo(pool, 0);
    } else if (op == 'i') {  // import and map the parent's VMM allocation (fd arg), kept
      CUmemGenericAllocationHandle h;
      size_t size = 256ull << 20;
      CUdeviceptr ptr = 0;
      CUmemAccessDesc access{};
      access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      access.location.id = 0;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      if (cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<std::uintptr_t>(arg)),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != CUDA_SUCCESS ||
          cuMemAddressReserve(&ptr, size, 0, 0, 0) != CUDA_SUCCESS || cuMemMap(ptr, size, 0, h, 0) != CUDA_SUCCESS ||
          cuMemSetAccess(ptr, size, &access, 1) != CUDA_SUCCESS)
        said = "import failed";
    } else if (op == 'q') {
      break;
    }
    std::printf("%s\n", said.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return child();
  Nvml nvml;
  std::printf("probe_outside: NVML %s\n", nvml.ok ? "loaded" : "NOT available");
  // a 256 MiB VMM allocation of this process, exported as a file descriptor the child inherits
  int vmm_fd = -1;
  {
    cudaFree(nullptr);
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle h;
    if (cuMemCreate(&h, 256ull << 20, &prop, 0) != CUDA_SUCCESS ||
        cuMemExportToShareableHandle(&vmm_fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) != CUDA_SUCCESS)
      std::printf("parent: VMM export failed\n");
    if (vmm_fd >= 0) fcntl(vmm_fd, F_SETFD, 0);  // inherited by the child
    std::printf("parent (pid %d) holds a 256 MiB VMM allocation, fd %d\n", getpid(), vmm_fd);
  }
  int to_child[2], from_child[2];
  if (pipe(to_child) || pipe(from_child)) return 1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    std::vector<char*> args;
    if (argc > 2 && std::strcmp(argv[1], "--wrap") == 0)
      for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
    char self[] = "/proc/self/exe";
    char flag[] = "--child";
    std::string exe(4096, '\0');
    const ssize_t len = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
    exe.resize(len > 0 ? static_cast<std::size_t>(len) : 0);
    args.push_back(exe.empty() ? self : exe.data());
    args.push_back(flag);
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::_Exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  std::printf("child: %s (its pid here: %d)\n", reply(from_child[0]).c_str(), pid);
  const char* steps[][2] = {{"m 0\n", "after start-up"},        {"m 256\n", "cudaMalloc 256 MiB held"},
                            {"m 1024\n", "+ cudaMalloc 1024 MiB held"}, {"f 0\n", "all cudaFree'd"},
                            {"a 512\n", "cudaMallocAsync 512 MiB, freed async, synced"},
                            {"s 200\n", "a 200 ms kernel, cudaDeviceSynchronize"},
                            {"t 1000\n", "1000 x cudaMalloc 4 KiB held"}, {"f 0\n", "all cudaFree'd"},
                            {"k 512\n", "pool keeps all: cudaMallocAsync 512 MiB, freed, synced"},
                            {"r 0\n", "cudaMemPoolTrimTo(0)"}, {nullptr, "import the parent's VMM 256 MiB"}};
  for (const auto& step : steps) {
    const std::string import = "i " + std::to_string(vmm_fd) + "\n";
    command(to_child[1], step[0] ? step[0] : import.c_str());
    const std::string said = reply(from_child[0]);
    std::string listed;
    long long mine = -1;
    for (const ProcessInfo& p : nvml.list()) {
      listed += " " + std::to_string(p.pid) + ":" + std::to_string(p.used_gpu_memory >> 20);
      if (static_cast<pid_t>(p.pid) == pid) mine = static_cast<long long>(p.used_gpu_memory >> 20);
    }
    std::printf("%-46s child says: %-28s NVML, child's pid: %s MiB; all (pid:MiB):%s\n", step[1], said.c_str(),
                mine < 0 ? "not listed" : std::to_string(mine).c_str(), listed.c_str());
  }
  command(to_child[1], "q 0\n");
  int status = 0;
  waitpid(pid, &status, 0);
  return 0;
}
