#include "outside.h"

#include <dirent.h>
#include <dlfcn.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

namespace scangrade::grader {

namespace {

// nvmlProcessInfo_v2 / _v3: the layout of what nvmlDeviceGetComputeRunningProcesses_v3 fills
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
constexpr unsigned long long kNotAvailable = ~0ull;  // NVML_VALUE_NOT_AVAILABLE

pid_t parent_of(const char* pid) {
  char path[300];
  std::snprintf(path, sizeof path, "/proc/%s/stat", pid);
  std::FILE* f = std::fopen(path, "r");
  if (!f) return -1;
  char buf[512];
  const std::size_t got = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[got] = '\0';
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it
  const char* end = nullptr;
  for (const char* p = buf; *p; ++p)
    if (*p == ')') end = p;
  int ppid = -1;
  if (!end || std::sscanf(end + 1, " %*c %d", &ppid) != 1) return -1;
  return ppid;
}

/// The children of `pid`'s threads from /proc/<pid>/task/<tid>/children (Linux 3.5+ with
/// CONFIG_PROC_CHILDREN); false when the kernel has no such files.
bool children_from_tasks(pid_t pid, std::vector<pid_t>& out) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid));
  DIR* d = opendir(path);
  if (!d) return true;  // gone: no children
  bool supported = true;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char file[320];
    std::snprintf(file, sizeof file, "/proc/%d/task/%s/children", static_cast<int>(pid), e->d_name);
    std::FILE* f = std::fopen(file, "r");
    if (!f) {
      if (errno == ENOENT) supported = false;
      continue;
    }
    for (int child; std::fscanf(f, "%d", &child) == 1;) out.push_back(child);
    std::fclose(f);
  }
  closedir(d);
  return supported;
}

}  // namespace

std::vector<pid_t> process_tree_from_parents(pid_t root) {
  // every process's parent, from /proc/<pid>/stat: a read for each process of the machine (9.6 ms a
  // call with 466 processes, against 0.02 ms for the children files of a small tree)
  std::multimap<pid_t, pid_t> children;
  if (DIR* d = opendir("/proc")) {
    while (const dirent* e = readdir(d)) {
      if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
      const pid_t ppid = parent_of(e->d_name);
      if (ppid > 0) children.emplace(ppid, static_cast<pid_t>(std::atol(e->d_name)));
    }
    closedir(d);
  }
  std::vector<pid_t> tree{root};
  for (std::size_t i = 0; i < tree.size(); ++i) {
    const auto [from, to] = children.equal_range(tree[i]);
    for (auto it = from; it != to; ++it) tree.push_back(it->second);
  }
  return tree;
}

std::vector<pid_t> process_tree(pid_t root) {
  std::vector<pid_t> tree{root};
  bool supported = true;
  for (std::size_t i = 0; i < tree.size() && supported; ++i) supported = children_from_tasks(tree[i], tree);
  return supported ? tree : process_tree_from_parents(root);
}

DeviceMemoryView::DeviceMemoryView() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    why_ = "libnvidia-ml.so.1 is not installed";
    return;
  }
  using Init = int (*)();
  using Count = int (*)(unsigned int*);
  using Handle = int (*)(unsigned int, void**);
  const auto init = reinterpret_cast<Init>(dlsym(lib, "nvmlInit_v2"));
  const auto count = reinterpret_cast<Count>(dlsym(lib, "nvmlDeviceGetCount_v2"));
  const auto handle = reinterpret_cast<Handle>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto processes = reinterpret_cast<Processes>(dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
  if (!init || !count || !handle || !processes) {
    why_ = "this NVML lacks nvmlDeviceGetComputeRunningProcesses_v3";
    return;
  }
  if (init() != 0 || count(&device_count_) != 0) {
    why_ = "NVML did not initialise";
    return;
  }
  if (device_count_ > 16) device_count_ = 16;
  for (unsigned int i = 0; i < device_count_; ++i)
    if (handle(i, &devices_[i]) != 0) devices_[i] = nullptr;
  processes_ = processes;
}

const DeviceMemoryView& DeviceMemoryView::get() {
  static const DeviceMemoryView view;
  return view;
}

std::int64_t DeviceMemoryView::held_by_tree(pid_t root) const {
  if (!processes_ || root <= 0) return -1;
  const std::vector<pid_t> tree = process_tree(root);
  std::int64_t held = 0;
  std::vector<ProcessInfo> list(256);
  for (unsigned int i = 0; i < device_count_; ++i) {
    if (!devices_[i]) continue;
    unsigned int n = static_cast<unsigned int>(list.size());
    if (processes_(devices_[i], &n, list.data()) != 0) return -1;
    for (unsigned int k = 0; k < n && k < list.size(); ++k)
      for (const pid_t pid : tree)
        if (static_cast<pid_t>(list[k].pid) == pid) {
          if (list[k].used_gpu_memory == kNotAvailable) return -1;
          held += static_cast<std::int64_t>(list[k].used_gpu_memory);
        }
  }
  return held;
}

}  // namespace scangrade::grader
