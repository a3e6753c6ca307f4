package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// SchemaVersion is the version of the JSON report (bench/schema.json).
const SchemaVersion = 1

// Report is the JSON document of a run (--json). Exactly one of Results
// (the suite), Load (--load), Scale (--files, with ScaleRepos) and Real
// (--real, with RealRepos) is set.
type Report struct {
	SchemaVersion int           `json:"schema_version"`
	Machine       Machine       `json:"machine"`
	GoVersion     string        `json:"go_version"`
	Commit        string        `json:"commit"`
	StartedAt     time.Time     `json:"started_at"`
	Settings      Settings      `json:"settings"`
	Results       []Result      `json:"results,omitempty"`
	Load          *LoadReport   `json:"load,omitempty"`
	Scale         []ScaleResult `json:"scale,omitempty"`
	ScaleRepos    []ScaleRepo   `json:"scale_repos,omitempty"`
	Real          []RealResult  `json:"real,omitempty"`
	RealRepos     []RealRepo    `json:"real_repos,omitempty"`
	// SideBySide sets harnessd's raw MCP client, Forge's server through
	// the same client and in process against each other (sidebyside.go).
	SideBySide []SideBySide `json:"side_by_side,omitempty"`
}

// Settings records how the run was made.
type Settings struct {
	Warmup      int      `json:"warmup,omitempty"`
	Iterations  int      `json:"iterations,omitempty"`
	Surfaces    []string `json:"surfaces"`
	Cases       []string `json:"cases,omitempty"`
	SearchFloor string   `json:"search_floor,omitempty"` // "rg" or "git grep"
	// Files are the repository sizes of --files; Seed seeds their generator.
	Files []int  `json:"files,omitempty"`
	Seed  uint64 `json:"seed,omitempty"`
	// Real is --real's DIR; Queries are the rare and the common symbol
	// its searches look for.
	Real    string   `json:"real,omitempty"`
	Queries []string `json:"queries,omitempty"`
	// Forge is the Forge of forge-mcp-stdio-raw, when it was found.
	Forge *ForgeInfo `json:"forge,omitempty"`
	// FS is the server-filesystem of fs-mcp-stdio-raw, when it was found.
	FS *FSInfo `json:"fs_server,omitempty"`
}

// Result is one case measured through one surface. Times are milliseconds.
// A skipped or failed case carries only Skipped or Error (with Case,
// Surface and Floor).
type Result struct {
	Case       string    `json:"case"`
	Surface    string    `json:"surface"`
	Iterations int       `json:"iterations"`
	Calls      int       `json:"calls,omitempty"` // MCP (or CallOp) calls per iteration
	TotalMs    *Dist     `json:"total_ms,omitempty"`
	ServerMs   *Med      `json:"server_ms,omitempty"`
	SegmentsMs *Segments `json:"segments_ms,omitempty"`
	FloorMs    *Med      `json:"floor_ms,omitempty"`
	OverheadMs *float64  `json:"overhead_ms,omitempty"`
	Ratio      *float64  `json:"ratio,omitempty"`
	Floor      string    `json:"floor"`
	Skipped    string    `json:"skipped,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// Dist is the median and 90th percentile of a measurement.
type Dist struct {
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
}

// Med is the median of a measurement.
type Med struct {
	Median float64 `json:"median"`
}

// Segments are the medians of the latency segments harnessd reports
// (summed over the calls of one iteration).
type Segments struct {
	RoutingMs   float64 `json:"routing_ms"`
	PolicyMs    float64 `json:"policy_ms"`
	SnapshotMs  float64 `json:"snapshot_ms"`
	ExecutionMs float64 `json:"execution_ms"`
	ReceiptMs   float64 `json:"receipt_ms"`
	// SandboxMs is the cost of confining the commands (the launcher or
	// the forking thread's Landlock and seccomp).
	SandboxMs float64 `json:"sandbox_ms"`
}

// summarize fills r's figures from the measured iterations.
func (r *Result) summarize(smps []sample, floorsMs []float64) {
	n := len(smps)
	r.Iterations = n
	if n == 0 {
		return
	}
	walls := make([]float64, n)
	servers := make([]float64, n)
	var segs [numSegments][]float64
	for i, s := range smps {
		walls[i] = ms(s.wall)
		servers[i] = s.server
		for j := range segs {
			segs[j] = append(segs[j], s.seg[j])
		}
	}
	total := Median(walls)
	floor := Median(floorsMs)
	r.TotalMs = &Dist{Median: round3(total), P90: round3(Percentile(walls, 90))}
	r.ServerMs = &Med{Median: round3(Median(servers))}
	r.SegmentsMs = &Segments{
		RoutingMs: round3(Median(segs[0])), PolicyMs: round3(Median(segs[1])), SnapshotMs: round3(Median(segs[2])),
		ExecutionMs: round3(Median(segs[3])), ReceiptMs: round3(Median(segs[4])), SandboxMs: round3(Median(segs[5])),
	}
	r.FloorMs = &Med{Median: round3(floor)}
	overhead := round3(total - floor)
	r.OverheadMs = &overhead
	if floor > 0 {
		ratio := round3(total / floor)
		r.Ratio = &ratio
	}
}

// note is the table's remark for a result.
func (r Result) note() string {
	switch {
	case r.Skipped != "":
		return "skipped (" + r.Skipped + ")"
	case r.Error != "":
		return "error: " + oneLine(r.Error, 160)
	}
	return ""
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

func f3(x float64) string { return fmt.Sprintf("%.3f", x) }

// writeTable prints the suite's results as an aligned table.
func writeTable(w io.Writer, rep *Report) error {
	m := rep.Machine
	fmt.Fprintf(w, "harnessd bench: %d iterations after %d warmup; times in ms, medians unless noted\n",
		rep.Settings.Iterations, rep.Settings.Warmup)
	fmt.Fprintf(w, "machine: %s/%s, %d CPUs, %s, %.1f GiB; %s; commit %s\n\n",
		m.OS, m.Arch, m.CPUs, m.CPUModel, float64(m.MemTotal)/(1<<30), rep.GoVersion, rep.Commit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tSURFACE\tMEDIAN\tP90\tFLOOR\tOVERHEAD\tRATIO\tSERVER\tROUTING\tPOLICY\tSNAPSHOT\tEXEC\tRECEIPT\tSANDBOX\tNOTE")
	for _, r := range rep.Results {
		if r.TotalMs == nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", r.Case, r.Surface, r.note())
			continue
		}
		ratio := "-"
		if r.Ratio != nil {
			ratio = fmt.Sprintf("%.2fx", *r.Ratio)
		}
		s := r.SegmentsMs
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Case, r.Surface, f3(r.TotalMs.Median), f3(r.TotalMs.P90), f3(r.FloorMs.Median), f3(*r.OverheadMs), ratio,
			f3(r.ServerMs.Median), f3(s.RoutingMs), f3(s.PolicyMs), f3(s.SnapshotMs), f3(s.ExecutionMs), f3(s.ReceiptMs), f3(s.SandboxMs), r.note())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nMEDIAN/P90: wall time at the client; SERVER: latency.total_ms harnessd reported; segments from include_latency_breakdown.")
	fmt.Fprintln(w, "floors (the raw operation without harnessd):")
	seen := map[string]bool{}
	for _, r := range rep.Results {
		if seen[r.Case] {
			continue
		}
		seen[r.Case] = true
		fmt.Fprintf(w, "  %-26s %s\n", r.Case, r.Floor)
	}
	return writeSideBySide(w, rep)
}

// writeJSON prints rep as indented JSON.
func writeJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
