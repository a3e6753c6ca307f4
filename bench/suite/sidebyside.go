package suite

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// SideBySide is one case through harnessd's mcp-stdio-raw, Forge's server
// through the same client (forge-mcp-stdio-raw) and in process: the
// medians of the client-side wall time, in ms. A figure is absent when its
// surface did not run the case.
type SideBySide struct {
	Case string `json:"case"`
	// Calls is the number of MCP calls of one harnessd iteration (1 when
	// batch or read_lanes carries the steps).
	Calls      int      `json:"calls"`
	InprocMs   *float64 `json:"inproc_ms,omitempty"`
	HarnessdMs *float64 `json:"harnessd_ms,omitempty"` // mcp-stdio-raw
	ForgeMs    *float64 `json:"forge_ms,omitempty"`
	// ForgeCalls is the number of MCP calls of one Forge iteration.
	ForgeCalls int `json:"forge_calls,omitempty"`
	// ForgeOverHarnessd is forge_ms / harnessd_ms: above 1, harnessd is faster.
	ForgeOverHarnessd *float64 `json:"forge_over_harnessd,omitempty"`
	// FSMs is the case through server-filesystem (fs-mcp-stdio-raw), one
	// call; FSOverHarnessd is fs_ms / harnessd_ms: above 1, harnessd is
	// faster.
	FSMs           *float64 `json:"fs_ms,omitempty"`
	FSOverHarnessd *float64 `json:"fs_over_harnessd,omitempty"`
	// TransportPerCallMs is harnessd's own cost of the MCP transport per
	// call: (harnessd_ms - inproc_ms) / calls.
	TransportPerCallMs *float64 `json:"transport_per_call_ms,omitempty"`
}

// calls returns how many calls one iteration of c makes through s.
func (c caseDef) calls(s surface) int {
	if c.via != "" && !separateCalls() && s.HasOp(c.via) {
		return 1
	}
	return len(c.steps)
}

// sideBySide sets the measured mcp-stdio-raw results against inproc,
// forge-mcp-stdio-raw and fs-mcp-stdio-raw, per case in the order of the
// results. A case is listed when mcp-stdio-raw and at least one of the
// others measured it.
func sideBySide(results []Result) []SideBySide {
	type trio struct{ inproc, raw, forge, fs *Result }
	by := map[string]*trio{}
	var order []string
	for i := range results {
		r := &results[i]
		if r.TotalMs == nil {
			continue
		}
		t := by[r.Case]
		if t == nil {
			t = &trio{}
			by[r.Case] = t
			order = append(order, r.Case)
		}
		switch r.Surface {
		case SurfaceInproc:
			t.inproc = r
		case SurfaceMCPStdioRaw:
			t.raw = r
		case SurfaceForgeMCPStdioRaw:
			t.forge = r
		case SurfaceFSMCPStdioRaw:
			t.fs = r
		}
	}
	var out []SideBySide
	for _, name := range order {
		t := by[name]
		if t.raw == nil || t.inproc == nil && t.forge == nil && t.fs == nil {
			continue
		}
		raw := t.raw.TotalMs.Median
		sb := SideBySide{Case: name, Calls: max(1, t.raw.Calls), HarnessdMs: &raw}
		if t.inproc != nil {
			in := t.inproc.TotalMs.Median
			per := round3((raw - in) / float64(sb.Calls))
			sb.InprocMs, sb.TransportPerCallMs = &in, &per
		}
		if t.forge != nil {
			f := t.forge.TotalMs.Median
			sb.ForgeMs, sb.ForgeCalls = &f, t.forge.Calls
			if raw > 0 {
				ratio := round3(f / raw)
				sb.ForgeOverHarnessd = &ratio
			}
		}
		if t.fs != nil {
			f := t.fs.TotalMs.Median
			sb.FSMs = &f
			if raw > 0 {
				ratio := round3(f / raw)
				sb.FSOverHarnessd = &ratio
			}
		}
		out = append(out, sb)
	}
	return out
}

// writeSideBySide prints rep.SideBySide (nothing when it is empty).
func writeSideBySide(w io.Writer, rep *Report) error {
	if len(rep.SideBySide) == 0 {
		return nil
	}
	withFS := slices.ContainsFunc(rep.SideBySide, func(sb SideBySide) bool { return sb.FSMs != nil })
	fmt.Fprintln(w, "\nside by side (medians of the client-side wall time, ms; harnessd and its peers through the same raw JSON-RPC client):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "CASE\tCALLS\tINPROC\tMCP-STDIO-RAW\tFORGE\tFORGE/HARNESSD"
	if withFS {
		head += "\tSERVER-FILESYSTEM\tFS/HARNESSD"
	}
	fmt.Fprintln(tw, head+"\tTRANSPORT/CALL")
	opt := func(p *float64, suffix string) string {
		if p == nil {
			return "-"
		}
		return f3(*p) + suffix
	}
	ratio := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.1fx", *p)
	}
	for _, sb := range rep.SideBySide {
		calls := fmt.Sprint(sb.Calls)
		if sb.ForgeMs != nil && sb.ForgeCalls != sb.Calls {
			calls = fmt.Sprintf("%d (forge %d)", sb.Calls, sb.ForgeCalls)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s", sb.Case, calls, opt(sb.InprocMs, ""), opt(sb.HarnessdMs, ""),
			opt(sb.ForgeMs, ""), ratio(sb.ForgeOverHarnessd))
		if withFS {
			fmt.Fprintf(tw, "\t%s\t%s", opt(sb.FSMs, ""), ratio(sb.FSOverHarnessd))
		}
		fmt.Fprintf(tw, "\t%s\n", opt(sb.TransportPerCallMs, ""))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "FORGE/HARNESSD: forge-mcp-stdio-raw / mcp-stdio-raw; TRANSPORT/CALL: (mcp-stdio-raw - inproc) / CALLS, harnessd's own cost of the MCP transport per call.")
	if withFS {
		fmt.Fprintln(w, "FS/HARNESSD: fs-mcp-stdio-raw / mcp-stdio-raw (above 1, harnessd is faster); server-filesystem reports no server time.")
	}
	if f := rep.Settings.Forge; f != nil {
		fmt.Fprintf(w, "forge: %s %s under %s, toolset %s; its SERVER is the serverDurationMs it reports, its segments its Thin Harness latency (batch, lanes, git_status)\n", f.Path, f.Version, f.Runtime, f.Toolset)
	}
	if f := rep.Settings.FS; f != nil {
		fmt.Fprintf(w, "server-filesystem: %s %s (read: %s)\n", f.Path, f.Version, f.ReadTool)
	}
	return nil
}
