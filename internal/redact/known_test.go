package redact

import (
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

var kmark = mark(KnownRuleID)

// Fake known values, assembled at run time like the rule fixtures.
var (
	kvDB    = "db-" + fake(101, 21, lowerUpperDigits)  // 24 bytes
	kvAPI   = "api_" + fake(102, 28, lowerUpperDigits) // 32 bytes
	kvShort = fake(103, 6, lowerUpperDigits)           // the shortest kept
	kvTiny  = fake(104, 5, lowerUpperDigits)           // too short: ignored
	kvOverA = "ovA" + fake(105, 9, lowerUpperDigits)   // its tail starts kvOverB
	kvOverB = kvOverA[6:] + fake(106, 10, lowerUpperDigits)
	kvNL    = "first-" + fake(107, 8, lowerUpperDigits) + "\nsecond-" + fake(108, 8, lowerUpperDigits)
)

func knownRedactor(values ...string) *Redactor { return New(nil).WithKnown(NewKnown(values)) }

func TestNewKnown(t *testing.T) {
	k := NewKnown([]string{kvShort, kvDB, kvTiny, kvDB, "", kvAPI})
	if k.Len() != 3 {
		t.Fatalf("Len() = %d, want 3 (short and duplicate values dropped)", k.Len())
	}
	if !slices.Equal(k.values, []string{kvAPI, kvDB, kvShort}) {
		t.Errorf("values not deduplicated longest first: lengths %d, %d, %d", len(k.values[0]), len(k.values[1]), len(k.values[2]))
	}
	for i := 1; i < len(k.forms); i++ {
		if len(k.forms[i]) > len(k.forms[i-1]) {
			t.Fatalf("forms not sorted longest first at %d", i)
		}
	}
	for _, f := range k.forms {
		if len(f) < MinKnownFormLen && !slices.Contains(k.values, f) {
			t.Errorf("derived form of %d bytes kept, want at least %d", len(f), MinKnownFormLen)
		}
	}
	if k.MaxFormLen() != 2*len(kvAPI) {
		t.Errorf("MaxFormLen() = %d, want the hex length %d", k.MaxFormLen(), 2*len(kvAPI))
	}
	if !k.Equal(NewKnown([]string{kvAPI, kvShort, kvDB})) || k.Equal(NewKnown([]string{kvAPI})) {
		t.Error("Equal does not compare the value sets")
	}
	var nilK *Known
	if nilK.Len() != 0 || nilK.Forms() != 0 || nilK.MaxFormLen() != 0 || !nilK.Equal(NewKnown(nil)) {
		t.Error("a nil Known is not empty")
	}
	if NewKnown([]string{strings.Repeat("x", MaxKnownLen+1)}).Len() != 0 {
		t.Error("a value over MaxKnownLen was kept")
	}
}

func TestWithKnownEmpty(t *testing.T) {
	r := Default()
	for name, k := range map[string]*Known{"nil": nil, "empty": NewKnown(nil), "only short": NewKnown([]string{kvTiny})} {
		if got := r.WithKnown(k); got != r {
			t.Errorf("WithKnown(%s) returned a new redactor, want the receiver", name)
		}
	}
	if Default().Known() != nil {
		t.Error("Default().Known() is not nil")
	}
}

func TestKnownString(t *testing.T) {
	r := knownRedactor(kvDB, kvAPI, kvShort, kvTiny, kvOverA, kvOverB)
	tests := []struct {
		name, in, want string
		n              int
	}{
		{"exact", kvDB, kmark, 1},
		{"in a line", "DB_PASSWORD=" + kvDB + "\n", "DB_PASSWORD=" + kmark + "\n", 1},
		{"inside words", "xx" + kvAPI + "yy", "xx" + kmark + "yy", 1},
		{"multiple", kvDB + " and " + kvAPI + " and " + kvDB, kmark + " and " + kmark + " and " + kmark, 3},
		{"adjacent", kvDB + kvDB, kmark + kmark, 2},
		{"shortest kept", "<" + kvShort + ">", "<" + kmark + ">", 1},
		{"too short ignored", "<" + kvTiny + ">", "<" + kvTiny + ">", 0},
		{"overlapping merge", "[" + kvOverA + kvOverB[6:] + "]", "[" + kmark + "]", 1},
		{"prefix only", "x" + kvDB[:len(kvDB)-1] + " y", "x" + kvDB[:len(kvDB)-1] + " y", 0},
		{"none", "nothing to see here\n", "nothing to see here\n", 0},
		{"empty", "", "", 0},
		{"std base64", "echo " + base64.StdEncoding.EncodeToString([]byte(kvAPI)) + " |", "echo " + kmark + " |", 1},
		{"raw url base64", base64.RawURLEncoding.EncodeToString([]byte(kvDB)), kmark, 1},
		{"lower hex", "0x" + hex.EncodeToString([]byte(kvDB)) + ".", "0x" + kmark + ".", 1},
		{"upper hex", strings.ToUpper(hex.EncodeToString([]byte(kvAPI))), kmark, 1},
		{"marker text around", "[REDACTED:x] " + kvDB, "[REDACTED:x] " + kmark, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n := r.String(tt.in)
			if got != tt.want || n != tt.n {
				t.Errorf("String(%q) = %q, %d, want %q, %d", tt.in, got, n, tt.want, tt.n)
			}
			if b, nb := r.Bytes([]byte(tt.in)); string(b) != got || nb != n {
				t.Errorf("Bytes = %q, %d, want String's %q, %d", b, nb, got, n)
			}
		})
	}
}

func TestKnownWithRules(t *testing.T) {
	r := Default().WithKnown(NewKnown([]string{kvDB}))
	in := "token " + ghToken + " and " + kvDB
	want := "token " + mark("github-token") + " and " + kmark
	if got, n := r.String(in); got != want || n != 2 {
		t.Errorf("String = %q, %d, want %q, 2", got, n, want)
	}
	// A known value that a rule redacts in part is still replaced whole.
	long := "pre-" + ghToken + "-post"
	r = Default().WithKnown(NewKnown([]string{long}))
	if got, n := r.String("x " + long + " y"); got != "x "+kmark+" y" || n != 1 {
		t.Errorf("String = %q, %d, want the merged known marker", got, n)
	}
	// The rule fixtures still pass through a WithKnown redactor.
	r = Default().WithKnown(NewKnown([]string{kvAPI}))
	for _, f := range ruleFixtures() {
		if got, _ := r.String(f.in); got != f.want {
			t.Errorf("%s: String = %q, want %q", f.name, got, f.want)
		}
	}
	// WithKnown replaces an earlier set.
	r2 := r.WithKnown(NewKnown([]string{kvDB}))
	if got, _ := r2.String(kvAPI + " " + kvDB); got != kvAPI+" "+kmark {
		t.Errorf("second WithKnown: String = %q, want only the new set redacted", got)
	}
}

// TestKnownBase64Stream encodes a whole .env file, as `base64 -w0 .env`
// does, with the value at each byte alignment, and checks that what remains
// around the marker does not decode to any complete byte of the value.
func TestKnownBase64Stream(t *testing.T) {
	encs := map[string]*base64.Encoding{
		"std": base64.StdEncoding, "url": base64.URLEncoding,
		"raw std": base64.RawStdEncoding, "raw url": base64.RawURLEncoding,
	}
	for _, value := range []string{kvDB, kvAPI, kvShort + "x", kvAPI + "\xff\xfe?>"} {
		r := knownRedactor(value)
		for off := range 3 {
			for name, enc := range encs {
				env := "# local settings\nAPP=demo\n" + strings.Repeat("#", off)
				pos := len(env) + len("TOKEN=")
				env += "TOKEN=" + value + "\nDEBUG=1\n"
				if pos%3 != (len("# local settings\nAPP=demo\nTOKEN=")+off)%3 {
					t.Fatal("bad fixture")
				}
				in := enc.EncodeToString([]byte(env))
				out, n := r.String(in)
				if n != 1 {
					t.Fatalf("%s, offset %d mod 3: %d redactions of %q, want 1", name, pos%3, n, in)
				}
				i := strings.Index(out, kmark)
				prefix, suffix := out[:i], out[i+len(kmark):]
				if !strings.HasPrefix(in, prefix) || !strings.HasSuffix(in, suffix) {
					t.Fatalf("output %q is not the input with one span replaced", out)
				}
				// The characters kept before the marker determine the first
				// 6*len(prefix)/8 bytes; those kept after it determine the
				// bytes from ceil(6*j/8) on, where j is where they start.
				if got := 6 * len(prefix) / 8; got > pos {
					t.Errorf("%s, offset %d mod 3: the prefix decodes %d bytes, past the value at %d", name, pos%3, got, pos)
				}
				j := len(in) - len(suffix)
				if got := (6*j + 7) / 8; got < pos+len(value) {
					t.Errorf("%s, offset %d mod 3: the suffix decodes from byte %d, inside the value ending at %d", name, pos%3, got, pos+len(value))
				}
			}
		}
	}
}

func TestKnownFalsePositives(t *testing.T) {
	var values []string
	for i := range 50 {
		values = append(values, fake(uint64(200+i), 12+i%20, lowerUpperDigits))
	}
	r := Default().WithKnown(NewKnown(values))
	clean := cleanText(32 << 10)
	want, _ := Default().String(clean)
	if got, n := r.String(clean); got != want {
		t.Errorf("clean text: %d redactions with known values, output differs from Default", n)
	}
	for _, tt := range falsePositives {
		if got, n := r.String(tt.in); got != tt.in || n != 0 {
			t.Errorf("%s: String(%q) = %q, %d, want unchanged", tt.name, tt.in, got, n)
		}
	}
	// A 6-byte value: its whole base64 (8 characters) is matched, but not
	// the 7-character part of a stream at alignment 1.
	v := "abcdef"
	k := NewKnown([]string{v})
	buf := append([]byte{0}, v...)
	short := streamForm(base64.RawStdEncoding.EncodeToString(buf), 1, len(buf))
	if len(short) != 7 || slices.Contains(k.forms, short) {
		t.Fatalf("stream form %q (%d) is kept", short, len(short))
	}
	in := "id " + short + " ok"
	if got, n := New(nil).WithKnown(k).String(in); got != in || n != 0 {
		t.Errorf("String(%q) = %q, %d, want unchanged", in, got, n)
	}
	if got, _ := New(nil).WithKnown(k).String("YWJjZGVm"); got != kmark {
		t.Errorf("whole base64 of a 6-byte value not redacted: %q", got)
	}
}

// TestKnownWriterSplit writes a value split at every byte boundary, in
// plain lines, at the forced cut of an over-long line, and with a value
// that holds a newline.
func TestKnownWriterSplit(t *testing.T) {
	r := Default().WithKnown(NewKnown([]string{kvDB, kvAPI, kvNL}))
	b64 := base64.StdEncoding.EncodeToString([]byte(kvAPI))
	long := strings.Repeat("y", MaxLine-len(kvDB)/2) // no blank: cut at MaxLine
	cases := map[string]struct {
		in     string
		lo, hi int // the value's range in in
	}{}
	add := func(name, before, value, after string) {
		cases[name] = struct {
			in     string
			lo, hi int
		}{before + value + after, len(before), len(before) + len(value)}
	}
	add("line", "DB=", kvDB, " # db\nnext line\n")
	add("no newline", "export API=", kvAPI, "")
	add("base64", "data: ", b64, "\n")
	add("newline in value", "MULTI=\"", kvNL, "\"\nrest\n")
	add("long line", long, kvDB, "zz\nend\n")
	add("long line base64", long[:len(long)-len(b64)/2+len(kvDB)/2], b64, "zz\n")
	for name, c := range cases {
		want, wantN := r.String(c.in)
		if wantN == 0 || strings.Contains(want, kvDB) || strings.Contains(want, b64) {
			t.Fatalf("%s: String did not redact the value", name)
		}
		for cut := c.lo; cut <= c.hi; cut++ {
			got, n := writeChunks(t, r, c.in, []int{cut})
			if got != want || n != wantN {
				t.Fatalf("%s cut at %d of [%d,%d]: Writer = %d redactions, equal %v; want %d",
					name, cut, c.lo, c.hi, n, got == want, wantN)
			}
		}
		if !strings.HasPrefix(name, "long") {
			cuts := make([]int, 0, len(c.in))
			for i := 1; i < len(c.in); i++ {
				cuts = append(cuts, i)
			}
			if got, n := writeChunks(t, r, c.in, cuts); got != want || n != wantN {
				t.Fatalf("%s byte at a time: Writer = %q, %d, want %q, %d", name, got, n, want, wantN)
			}
		}
	}
}

// TestKnownWriterHoldsAndFlush: the tail that may begin a value is held
// until more input; Flush writes it (a value cut by Flush is not caught).
func TestKnownWriterHoldsAndFlush(t *testing.T) {
	r := New(nil).WithKnown(NewKnown([]string{kvNL}))
	var out strings.Builder
	w := r.Writer(&out)
	head := "a\n" + kvNL[:10]
	if _, err := w.Write([]byte(head + "\n")); err != nil {
		t.Fatal(err)
	}
	// kvNL[:10] + "\n" is not a prefix of kvNL (its newline comes later),
	// so the whole input is out; now write a real prefix.
	if out.String() != head+"\n" {
		t.Fatalf("output %q, want everything", out.String())
	}
	nl := strings.IndexByte(kvNL, '\n')
	w.Write([]byte("b\n" + kvNL[:nl+1]))
	if got := out.String(); got != head+"\nb\n" {
		t.Fatalf("output %q, want the possible value start held", got)
	}
	w.Write([]byte(kvNL[nl+1:] + "\n"))
	if got := out.String(); got != head+"\nb\n"+kmark+"\n" {
		t.Fatalf("output %q, want the value redacted", got)
	}
	w.Write([]byte(kvNL[:nl+1]))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasSuffix(got, kvNL[:nl+1]) {
		t.Fatalf("Flush did not write the held tail: %q", got)
	}
	if err := w.Close(); err != nil || w.Count() != 1 {
		t.Fatalf("Close = %v, Count = %d, want nil, 1", err, w.Count())
	}
}

// TestKnownWriterMatchesStringProperty mixes known values (one spanning
// lines, one made of PEM body lines) with the rule fixtures and PEM blocks.
func TestKnownWriterMatchesStringProperty(t *testing.T) {
	pemValue := strings.TrimSuffix(pemBodyRSA, "\n") // the body, lines joined by newlines
	r := Default().WithKnown(NewKnown([]string{kvDB, kvAPI, kvNL, pemValue, base64.StdEncoding.EncodeToString([]byte(kvNL))}))
	pieces := append(streamPieces(), kvDB, "x="+kvAPI+";", kvNL, pemValue, "k: "+kvNL[:12], "pre "+kvNL+" post",
		"a "+kvDB+" b "+kvAPI+" c", "Authorization: Bearer "+kvNL,
		base64.StdEncoding.EncodeToString([]byte("A="+kvDB+"\nB="+kvAPI+"\n")))
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom(pieces), 1, 20).Draw(t, "parts")
		// Line separators, as in TestWriterMatchesStringProperty: a held PEM
		// block after a rule match on the same line is a known limit of
		// the Writer (its held part starts mid-line).
		in := strings.Join(parts, rapid.SampledFrom([]string{"\n", "\r\n", "\n\n"}).Draw(t, "sep"))
		cuts := rapid.SliceOfN(rapid.IntRange(0, len(in)), 0, 20).Draw(t, "cuts")
		slices.Sort(cuts)
		want, wantN := r.String(in)
		got, gotN := writeChunks(t, r, in, cuts)
		if got != want || gotN != wantN {
			t.Fatalf("Writer differs from String\ninput %q\ncuts %v\n got %q, %d\nwant %q, %d", in, cuts, got, gotN, want, wantN)
		}
		for _, v := range []string{kvDB, kvAPI, kvNL, pemValue} {
			if strings.Contains(want, v) {
				t.Fatalf("output holds a known value: %q", want)
			}
		}
	})
}

var anyMarker = regexp.MustCompile(`\[REDACTED:[A-Za-z0-9._-]+\]`)

// naiveKnown is the reference: every occurrence of every form, found with
// strings.Index; overlapping occurrences merge, adjacent ones do not.
func naiveKnown(k *Known, s string) (string, int) {
	type iv struct{ lo, hi int }
	var occ []iv
	for _, f := range k.forms {
		for i := 0; ; {
			j := strings.Index(s[i:], f)
			if j < 0 {
				break
			}
			occ = append(occ, iv{i + j, i + j + len(f)})
			i += j + 1
		}
	}
	slices.SortFunc(occ, func(a, b iv) int { return a.lo - b.lo })
	var merged []iv
	for _, o := range occ {
		if n := len(merged); n > 0 && o.lo < merged[n-1].hi {
			merged[n-1].hi = max(merged[n-1].hi, o.hi)
			continue
		}
		merged = append(merged, o)
	}
	var b strings.Builder
	prev := 0
	for _, m := range merged {
		b.WriteString(s[prev:m.lo])
		b.WriteString(kmark)
		prev = m.hi
	}
	b.WriteString(s[prev:])
	return b.String(), len(merged)
}

// FuzzKnown checks that redaction with known values never panics, that no
// kept value survives outside a marker, that the matcher agrees with a
// naive search, and that the Writer agrees with String.
func FuzzKnown(f *testing.F) {
	f.Add(kvDB, kvAPI, "A="+kvDB+"\n"+kvAPI, uint16(5))
	f.Add(kvOverA, kvOverB, "x"+kvOverA+kvOverB[6:]+"y", uint16(9))
	f.Add("aaaaaa", "aaaaaaaa", strings.Repeat("a", 40), uint16(3))
	f.Add("secret", "[REDACTED:known-secret]", "[REDACTED:known-secret] secret", uint16(0))
	f.Add(kvNL, "", "p "+kvNL+" q\n", uint16(12))
	f.Add(kvAPI, "\xff\x00\xfe\x01\xfd\x02", base64.StdEncoding.EncodeToString([]byte("Z"+kvAPI)), uint16(7))
	f.Add("REDACTED", "known-secret", "[REDACTED:known-secret]", uint16(2))
	f.Fuzz(func(t *testing.T, v1, v2, text string, cut uint16) {
		k := NewKnown([]string{v1, v2})
		in := text
		if k.Len() > 0 {
			c := int(cut) % (len(text) + 1)
			in = text[:c] + k.values[0] + text[c:]
		}
		for _, r := range []*Redactor{New(nil).WithKnown(k), Default().WithKnown(k)} {
			out, n := r.String(in)
			if k.Len() > 0 && n == 0 {
				t.Fatalf("planted value not redacted in %q", in)
			}
			for _, piece := range anyMarker.Split(out, -1) {
				for _, v := range k.values {
					if strings.Contains(piece, v) {
						t.Fatalf("value %q survives in %q (input %q)", v, out, in)
					}
				}
			}
			if b, nb := r.Bytes([]byte(in)); string(b) != out || nb != n {
				t.Fatalf("Bytes = %q, %d, want String's %q, %d", b, nb, out, n)
			}
			if !hasLongLine(in) {
				c := int(cut) % (len(in) + 1)
				got, gotN := writeChunks(t, r, in, []int{c / 2, c})
				if got != out || gotN != n {
					t.Fatalf("Writer(%q, cuts %d,%d) = %q, %d, want %q, %d", in, c/2, c, got, gotN, out, n)
				}
			}
		}
		if out, n := New(nil).WithKnown(k).String(in); k.Len() > 0 {
			want, wantN := naiveKnown(k, in)
			if out != want || n != wantN {
				t.Fatalf("String(%q) = %q, %d, naive search gives %q, %d", in, out, n, want, wantN)
			}
		}
	})
}
