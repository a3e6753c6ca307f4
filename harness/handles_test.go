package harness

import (
	"reflect"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/harness/ops"
)

// TestEveryOperationHasOneFacadeHandle: the facade holds exactly one typed
// handle per operation of the registry (one method per operation), each
// bound to its operation, and newHandles checked every handle's types
// against its operation (it panics otherwise, failing this test first).
func TestEveryOperationHasOneFacadeHandle(t *testing.T) {
	reg := ops.Registry()
	hs := reflect.ValueOf(newHandles(reg)).Elem()
	bound := map[string]string{} // operation -> field
	for i := range hs.NumField() {
		f := hs.Type().Field(i)
		n, ok := hs.Field(i).Interface().(interface{ Name() string })
		if !ok {
			t.Fatalf("field %s (%s) is not an op.Handle", f.Name, f.Type)
		}
		name := n.Name()
		if name == "" {
			t.Errorf("field %s: newHandles does not bind it", f.Name)
			continue
		}
		if prev, dup := bound[name]; dup {
			t.Errorf("operation %s has two facade handles: %s and %s", name, prev, f.Name)
		}
		bound[name] = f.Name
		if !strings.HasPrefix(f.Type.String(), "op.Handle[") {
			t.Errorf("field %s is a %s, not an op.Handle", f.Name, f.Type)
		}
	}
	for _, o := range reg.All() {
		if _, ok := bound[o.Name]; !ok {
			t.Errorf("operation %s has no facade handle: add a method and a field of handles (methods.go)", o.Name)
		}
	}
	if len(bound) != len(reg.All()) {
		t.Errorf("%d handles for %d operations", len(bound), len(reg.All()))
	}
	// Each field is named after the facade method that runs it.
	for name, field := range bound {
		if _, ok := reflect.TypeFor[*Harness]().MethodByName(field); !ok {
			t.Errorf("handle %s (%s): the facade has no method %s", field, name, field)
		}
	}
}
