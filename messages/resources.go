package messages

// Resources are the resource figures of a job's or a check's process tree
// (internal/procstat): sampled through the tree while it runs, completed
// with the kernel's own figures when it ends.
type Resources struct {
	// CPUMs is the user+system CPU time, in milliseconds.
	CPUMs int64 `json:"cpu_ms"`
	// PeakRSSBytes is the largest resident memory of the tree at once.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// IOReadBytes and IOWriteBytes are the storage I/O bytes (page cache
	// hits are not counted).
	IOReadBytes  int64 `json:"io_read_bytes"`
	IOWriteBytes int64 `json:"io_write_bytes"`
	// Processes is the largest number of processes at once (a sandboxed
	// command's count includes the sandbox's init).
	Processes int `json:"processes"`
}
