package testutil

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Feature is a kernel facility the sandbox's tests need.
type Feature string

// The features a sandbox test can need.
const (
	// Landlock is the Landlock LSM (any ABI).
	Landlock Feature = "landlock"
	// UserNS is an unprivileged user namespace with mount, network and
	// pid namespaces in it, and the launcher linked into the test binary.
	UserNS Feature = "userns"
	// Seccomp is seccomp filter loading.
	Seccomp Feature = "seccomp"
	// Cgroup is a delegated cgroup v2 hierarchy (often absent on CI
	// machines: "1" does not require it).
	Cgroup Feature = "cgroup"
)

// RequireSandboxEnv names the variable that turns a missing sandbox
// feature from a skip into a failure.
const RequireSandboxEnv = "HARNESSD_REQUIRE_SANDBOX"

// features lists every Feature, in the order messages name them.
var features = []Feature{Landlock, UserNS, Seccomp, Cgroup}

// requiredByOne is what HARNESSD_REQUIRE_SANDBOX=1 requires: what CI
// machines have.
var requiredByOne = []Feature{Landlock, UserNS, Seccomp}

// RequiredFeatures parses the value of HARNESSD_REQUIRE_SANDBOX: empty or
// "0" requires nothing, "1" Landlock, user namespaces and seccomp, and a
// comma-separated list of feature names exactly those. An unknown name is
// an error naming the known ones.
func RequiredFeatures(v string) ([]Feature, error) {
	switch v = strings.TrimSpace(v); v {
	case "", "0":
		return nil, nil
	case "1":
		return slices.Clone(requiredByOne), nil
	}
	var out []Feature
	for _, name := range strings.Split(v, ",") {
		f := Feature(strings.ToLower(strings.TrimSpace(name)))
		if !slices.Contains(features, f) {
			return nil, &unknownFeatureError{name: name}
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

type unknownFeatureError struct{ name string }

func (e *unknownFeatureError) Error() string {
	names := make([]string, len(features))
	for i, f := range features {
		names[i] = string(f)
	}
	return RequireSandboxEnv + ": unknown feature " + strings.TrimSpace(e.name) +
		`: use "1" (landlock,userns,seccomp) or a comma-separated list of ` + strings.Join(names, ", ")
}

// NeedSandbox stops t when the kernel lacks what (have is false; why says
// why): normally a skip, but a failure when HARNESSD_REQUIRE_SANDBOX
// requires the feature (CI sets it to 1), so a machine that silently runs
// none of the sandbox's attacks cannot pass for one that ran them all.
func NeedSandbox(t testing.TB, what Feature, have bool, why string) {
	t.Helper()
	if have {
		return
	}
	msg := "no " + string(what) + " here"
	if why != "" {
		msg += ": " + why
	}
	required, err := RequiredFeatures(os.Getenv(RequireSandboxEnv))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(required, what) {
		t.Fatalf("%s, and %s=%s requires it: run on a kernel with it (or unset the variable to skip)", msg, RequireSandboxEnv, os.Getenv(RequireSandboxEnv))
	}
	set := "1"
	if !slices.Contains(requiredByOne, what) {
		set = string(what)
	}
	t.Skip(msg + " (" + RequireSandboxEnv + "=" + set + " makes this a failure)")
}
