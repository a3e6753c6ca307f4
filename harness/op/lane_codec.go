package op

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"time"

	"github.com/harnessd/harnessd/internal/pathsafe"
)

// The compact binary form of plain data a lane step carries: the gate's
// answer (LaneRun.Gate) is written and read with it, and gateDigest hashes
// a gate input written with it. Values are written field by field, in
// declaration order, each length-prefixed, so no two values write the same
// bytes; reflection keeps the form complete when a struct gains a field
// (encoding/json would too, at ten times the cost per step).
//
// Written: strings, bools, integers, slices, exported struct fields,
// pointers; for a digest also time.Time (its instant), a *pathsafe.Root (its
// path) and an interface (its value's JSON: the gate's Args). Read: what
// the gate's answer holds (strings, bools, integers, slices, structs).

var (
	rootType = reflect.TypeFor[*pathsafe.Root]()
	timeType = reflect.TypeFor[time.Time]()
)

// errCodec is a value the lane codec cannot write or read.
var errCodec = errors.New("lane codec: unsupported value")

// appendData appends v's binary form to b.
func appendData(b []byte, v reflect.Value) ([]byte, error) {
	switch {
	case v.Type() == rootType:
		if v.IsNil() {
			return append(b, 0), nil
		}
		return appendString(append(b, 1), v.Interface().(*pathsafe.Root).Path()), nil
	case v.Type() == timeType:
		t := v.Interface().(time.Time)
		if t.IsZero() {
			return append(b, 0), nil
		}
		return binary.AppendVarint(append(b, 1), t.UnixNano()), nil
	}
	switch v.Kind() {
	case reflect.String:
		return appendString(b, v.String()), nil
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.AppendVarint(b, v.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return binary.AppendUvarint(b, v.Uint()), nil
	case reflect.Slice:
		if v.IsNil() {
			return append(b, 0), nil
		}
		b = binary.AppendUvarint(b, uint64(v.Len())+1)
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return append(b, v.Bytes()...), nil
		}
		for i := range v.Len() {
			var err error
			if b, err = appendData(b, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return b, nil
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if !f.CanInterface() { // unexported
				continue
			}
			var err error
			if b, err = appendData(b, f); err != nil {
				return nil, err
			}
		}
		return b, nil
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, 0), nil
		}
		return appendData(append(b, 1), v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return append(b, 0), nil
		}
		j, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, err
		}
		return appendString(append(b, 1), string(j)), nil
	}
	return nil, errCodec
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// readData reads v's binary form from b into v and returns the rest of b.
func readData(b []byte, v reflect.Value) ([]byte, error) {
	switch v.Kind() {
	case reflect.String:
		s, rest, err := readString(b)
		if err != nil {
			return nil, err
		}
		v.SetString(s)
		return rest, nil
	case reflect.Bool:
		if len(b) == 0 || b[0] > 1 {
			return nil, errCodec
		}
		v.SetBool(b[0] == 1)
		return b[1:], nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, k := binary.Varint(b)
		if k <= 0 || v.OverflowInt(n) {
			return nil, errCodec
		}
		v.SetInt(n)
		return b[k:], nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, k := binary.Uvarint(b)
		if k <= 0 || v.OverflowUint(n) {
			return nil, errCodec
		}
		v.SetUint(n)
		return b[k:], nil
	case reflect.Slice:
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return nil, errCodec
		}
		b = b[k:]
		if n == 0 {
			v.SetZero()
			return b, nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if n-1 > uint64(len(b)) {
				return nil, errCodec
			}
			v.SetBytes(append(reflect.MakeSlice(v.Type(), 0, int(n-1)).Bytes(), b[:n-1]...))
			return b[n-1:], nil
		}
		s := reflect.MakeSlice(v.Type(), int(n-1), int(n-1))
		for i := range s.Len() {
			var err error
			if b, err = readData(b, s.Index(i)); err != nil {
				return nil, err
			}
		}
		v.Set(s)
		return b, nil
	case reflect.Struct:
		if v.Type() == timeType {
			return nil, errCodec
		}
		for i := range v.NumField() {
			f := v.Field(i)
			if !f.CanSet() { // unexported
				continue
			}
			var err error
			if b, err = readData(b, f); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, errCodec
}

func readString(b []byte) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, errCodec
	}
	return string(b[k : k+int(n)]), b[k+int(n):], nil
}
