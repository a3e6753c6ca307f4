package suggest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"offset", "offset_line", 5},
		{"aply_patch", "apply_patch", 1}, {"kitten", "sitting", 3}, {"same", "same", 0},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestField(t *testing.T) {
	syn := map[string][]string{
		"status":  {"state"},
		"pattern": {"query"},
		"limit":   {"max_lines", "max_results"},
	}
	runStage := []string{"reason", "run_id", "stage", "status"}
	tests := []struct {
		name, k string
		fields  []string
		want    string
	}{
		{"a synonym the other way beats a closer spelling", "state", runStage, "status"},
		{"a synonym the listed way", "pattern", []string{"query", "path"}, "query"},
		{"a synonym's first field the tool has", "limit", []string{"max_results", "max_lines"}, "max_lines"},
		{"a synonym the tool does not have falls back to spelling", "limit", []string{"limits"}, "limits"},
		{"another case", "Path", []string{"path", "paths"}, "path"},
		{"one edit", "stagee", []string{"stage", "status"}, "stage"},
		{"too many edits, but contained", "offset", []string{"offset_line"}, "offset_line"},
		{"contains a field", "repo_id_x", []string{"repo_id"}, "repo_id"},
		{"nothing close", "zzz", runStage, ""},
		{"a short name is not matched by containment", "id", []string{"paths"}, ""},
		{"no fields", "state", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Field(tt.k, tt.fields, syn); got != tt.want {
				t.Errorf("Field(%q, %v) = %q, want %q", tt.k, tt.fields, got, tt.want)
			}
		})
	}
}

func TestNearest(t *testing.T) {
	tools := []string{"read_file", "search", "git_status", "git_diff", "apply_patch", "run_command", "run_check", "run_start", "run_stage", "job_start", "batch"}
	tests := []struct {
		name, in string
		n        int
		want     []string
	}{
		{"one edit first", "readfile", 3, []string{"read_file"}},
		{"a typo", "aply_patch", 3, []string{"apply_patch"}},
		{"edits rank by distance, then shared words", "run_stat", 3, []string{"run_start", "run_stage", "run_check"}},
		{"containment", "diff", 3, []string{"git_diff"}},
		{"a shared word, capped at n", "run_shell", 2, []string{"run_check", "run_start"}},
		{"another case is 0 edits away", "GIT_STATUS", 2, []string{"git_status", "git_diff"}},
		{"nothing close", "xyzzy", 3, nil},
		{"n of 0", "readfile", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Nearest(tt.in, tools, tt.n)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Nearest(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}
