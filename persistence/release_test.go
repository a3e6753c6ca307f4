package persistence

import "testing"

func TestStoreMappings(t *testing.T) {
	maps := []byte(`00400000-01a00000 r-xp 00000000 08:01 123 /usr/bin/harnessd
7f0000000000-7f0004000000 rw-s 00000000 08:01 7 /data/store/00001.mem
7f0004000000-7f0004100000 r--s 00000000 08:01 8 /data/store/000002.sst
7f0004100000-7f0004200000 r--s 00000000 08:01 9 /data/store/000001.sst (deleted)
7f0004200000-7f0004300000 r--s 00000000 08:01 10 /data/store2/000001.sst
7f0004300000-7f0004400000 rw-p 00000000 00:00 0
7f0004400000-7f0004500000 r--s 00000000 08:01 11 /data/store/dir with space/x.vlog
zzzz-7f0004600000 r--s 00000000 08:01 12 /data/store/bad.sst
7f0004700000-7f0004600000 r--s 00000000 08:01 13 /data/store/backwards.sst
short line
`)
	tests := []struct {
		dir  string
		want []mapping
	}{
		{"/data/store", []mapping{
			{0x7f0000000000, 0x7f0004000000, "/data/store/00001.mem"},
			{0x7f0004000000, 0x7f0004100000, "/data/store/000002.sst"},
			{0x7f0004400000, 0x7f0004500000, "/data/store/dir with space/x.vlog"},
		}},
		{"/data/store/", []mapping{
			{0x7f0000000000, 0x7f0004000000, "/data/store/00001.mem"},
			{0x7f0004000000, 0x7f0004100000, "/data/store/000002.sst"},
			{0x7f0004400000, 0x7f0004500000, "/data/store/dir with space/x.vlog"},
		}},
		{"/data/store2", []mapping{{0x7f0004200000, 0x7f0004300000, "/data/store2/000001.sst"}}},
		{"/elsewhere", nil},
	}
	for _, tc := range tests {
		got := storeMappings(maps, tc.dir)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: got %+v, want %+v", tc.dir, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: mapping %d = %+v, want %+v", tc.dir, i, got[i], tc.want[i])
			}
		}
	}
}
