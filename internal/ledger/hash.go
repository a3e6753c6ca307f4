package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/harnessd/harnessd/contract/errs"
)

// commonIgnored are the top-level argument fields that change what no
// request does, so every hash leaves them out: the request's own id, the
// latency report and the approval a retry carries. An operation names its
// own further fields in its descriptor (harness/op.Spec.HashIgnore), and
// they are passed to InputHashIgnoring.
var commonIgnored = [...]string{"request_id", "include_latency_breakdown", "approval_id"}

// CommonIgnored returns the fields every hash leaves out.
func CommonIgnored() []string { return slices.Clone(commonIgnored[:]) }

// ignored reports whether the top-level field k is left out of a hash.
func ignored(k string, extra []string) bool {
	return slices.Contains(commonIgnored[:], k) || slices.Contains(extra, k)
}

// maxDepth bounds the nesting of hashed arguments.
const maxDepth = 1000

// InputHash returns "sha256:<hex>" over the operation name and the canonical
// JSON of args: object keys sorted, no insignificant whitespace, numbers in
// shortest form (1.0 and 1e0 hash as 1), strings as UTF-8 with minimal
// escaping. The top-level fields request_id, include_latency_breakdown and
// approval_id are dropped first, so a retry with another of those still
// matches.
//
// args may be any value encoding/json can marshal; map[string]any, []any,
// json.RawMessage and the scalar kinds are walked directly without a
// marshal/unmarshal round trip. Unencodable args (channels, NaN, invalid raw
// JSON, nesting deeper than 1000) give errs.InvalidArgument.
func InputHash(operation string, args any) (string, error) {
	return InputHashIgnoring(operation, args, nil)
}

// InputHashIgnoring is InputHash leaving out the top-level fields in
// ignore as well as the common ones: an operation's fields that change
// nothing it does (wait_ms: how long to wait for a busy file), so a retry
// that changes only them replays instead of conflicting.
func InputHashIgnoring(operation string, args any, ignore []string) (string, error) {
	if operation == "" {
		return "", errs.New(errs.InvalidArgument, "input hash needs an operation")
	}
	c := canon{buf: make([]byte, 0, 1024), ignore: ignore}
	c.buf = append(c.buf, operation...)
	c.buf = append(c.buf, 0)
	if err := c.value(args, 0, true); err != nil {
		return "", errs.Wrap(errs.InvalidArgument, err, "arguments of %s cannot be hashed: %v", operation, err)
	}
	sum := sha256.Sum256(c.buf)
	out := make([]byte, 0, len("sha256:")+sha256.Size*2)
	out = append(out, "sha256:"...)
	out = hex.AppendEncode(out, sum[:])
	return string(out), nil
}

// canon writes the canonical JSON of a value into buf.
type canon struct {
	buf    []byte
	keys   []string // scratch for sorting object keys
	ignore []string // top-level fields left out beyond the common ones
}

func (c *canon) value(v any, depth int, top bool) error {
	if depth > maxDepth {
		return fmt.Errorf("nested deeper than %d", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		c.buf = append(c.buf, "null"...)
	case bool:
		c.buf = strconv.AppendBool(c.buf, x)
	case string:
		c.str(x)
	case json.Number:
		return c.number(string(x))
	case float64:
		return c.float(x)
	case float32:
		return c.float(float64(x))
	case int:
		c.buf = strconv.AppendInt(c.buf, int64(x), 10)
	case int8:
		c.buf = strconv.AppendInt(c.buf, int64(x), 10)
	case int16:
		c.buf = strconv.AppendInt(c.buf, int64(x), 10)
	case int32:
		c.buf = strconv.AppendInt(c.buf, int64(x), 10)
	case int64:
		c.buf = strconv.AppendInt(c.buf, x, 10)
	case uint:
		c.buf = strconv.AppendUint(c.buf, uint64(x), 10)
	case uint8:
		c.buf = strconv.AppendUint(c.buf, uint64(x), 10)
	case uint16:
		c.buf = strconv.AppendUint(c.buf, uint64(x), 10)
	case uint32:
		c.buf = strconv.AppendUint(c.buf, uint64(x), 10)
	case uint64:
		c.buf = strconv.AppendUint(c.buf, x, 10)
	case map[string]any:
		return c.object(x, depth, top)
	case []any:
		c.buf = append(c.buf, '[')
		for i, e := range x {
			if i > 0 {
				c.buf = append(c.buf, ',')
			}
			if err := c.value(e, depth+1, false); err != nil {
				return err
			}
		}
		c.buf = append(c.buf, ']')
	case []string:
		c.buf = append(c.buf, '[')
		for i, e := range x {
			if i > 0 {
				c.buf = append(c.buf, ',')
			}
			c.str(e)
		}
		c.buf = append(c.buf, ']')
	case json.RawMessage:
		return c.raw(x, depth, top)
	default:
		// Structs, typed maps and slices, pointers, Marshalers: take the
		// JSON encoding's view of them.
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return c.raw(b, depth, top)
	}
	return nil
}

// raw decodes JSON text, keeping numbers exact, and writes its canonical form.
func (c *canon) raw(b []byte, depth int, top bool) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if d.More() {
		return fmt.Errorf("invalid JSON: data after the top-level value")
	}
	return c.value(v, depth, top)
}

func (c *canon) object(m map[string]any, depth int, top bool) error {
	start := len(c.keys)
	for k := range m {
		if top && ignored(k, c.ignore) {
			continue
		}
		c.keys = append(c.keys, k)
	}
	keys := c.keys[start:]
	// Sort by the canonical (UTF-8 corrected) bytes, the same order whether
	// the map came from Go or from decoded JSON.
	slices.SortFunc(keys, func(a, b string) int { return compareUTF8(a, b) })
	c.buf = append(c.buf, '{')
	for i, k := range keys {
		if i > 0 {
			c.buf = append(c.buf, ',')
		}
		c.str(k)
		c.buf = append(c.buf, ':')
		if err := c.value(m[k], depth+1, false); err != nil {
			return err
		}
	}
	c.buf = append(c.buf, '}')
	c.keys = c.keys[:start]
	return nil
}

// compareUTF8 orders strings as their invalid-UTF-8-replaced forms.
func compareUTF8(a, b string) int {
	if utf8.ValidString(a) && utf8.ValidString(b) {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	return compareUTF8(fixUTF8(a), fixUTF8(b))
}

func fixUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b []byte
	for _, r := range s { // invalid bytes come out as utf8.RuneError
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}

const hexDigits = "0123456789abcdef"

// str writes s as a JSON string: only '"', '\\' and control characters are
// escaped, and invalid UTF-8 becomes U+FFFD, as encoding/json decodes it.
func (c *canon) str(s string) {
	c.buf = append(c.buf, '"')
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\':
				c.buf = append(c.buf, '\\', b)
			case b < 0x20:
				c.buf = append(c.buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			default:
				c.buf = append(c.buf, b)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			c.buf = utf8.AppendRune(c.buf, utf8.RuneError)
		} else {
			c.buf = append(c.buf, s[i:i+size]...)
		}
		i += size
	}
	c.buf = append(c.buf, '"')
}

// maxExact is 2^53: integers below it are exact in a float64.
const maxExact = 1 << 53

// float writes f in canonical number form.
func (c *canon) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("unsupported number %v", f)
	}
	if f == math.Trunc(f) {
		if math.Abs(f) < maxExact {
			c.buf = strconv.AppendInt(c.buf, int64(f), 10) // also turns -0 into 0
			return nil
		}
		// A large integral float64 is an exact integer; print all its digits
		// so it hashes like the same integer written as a literal.
		bi, _ := big.NewFloat(f).Int(nil)
		c.buf = bi.Append(c.buf, 10)
		return nil
	}
	c.buf = strconv.AppendFloat(c.buf, f, 'g', -1, 64)
	return nil
}

// number writes a JSON number literal in canonical form: integers exactly
// (any size), other numbers via float64.
func (c *canon) number(s string) error {
	if isIntLiteral(s) {
		if s == "-0" {
			s = "0"
		}
		c.buf = append(c.buf, s...)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Out of float64 range, or not a number at all.
		if _, ok := new(big.Float).SetString(s); !ok {
			return fmt.Errorf("invalid number %q", s)
		}
		return fmt.Errorf("number %q is out of range", s)
	}
	if f == math.Trunc(f) && math.Abs(f) >= maxExact {
		// A large integer written with a fraction or exponent: print it
		// exactly as an integer when it is one.
		if bf, ok := new(big.Float).SetPrec(2048).SetString(s); ok && bf.IsInt() {
			bi, _ := bf.Int(nil)
			c.buf = bi.Append(c.buf, 10)
			return nil
		}
	}
	return c.float(f)
}

// isIntLiteral reports whether s is a JSON integer: -?(0|[1-9][0-9]*).
func isIntLiteral(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
