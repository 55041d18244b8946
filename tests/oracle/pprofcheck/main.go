// pprofcheck: the Go oracle for heapprof's tests, built offline against
// Debian's golang-github-google-pprof-dev (GOPATH mode, see
// tests/oracle/lib.sh). Every subcommand is a thin wrapper over pprof's own
// profile package, so its output is what pprof itself does.
//
// CLI (stable; other tests depend on it):
//
//	pprofcheck check FILE              Parse+CheckValid, print Profile.String()
//	pprofcheck dump FILE               every field, ids included, one per line
//	                                   (exact structural comparison)
//	pprofcheck samples FILE            canonical sorted "stack|labels -> values"
//	                                   listing, independent of ids and order
//	pprofcheck totals FILE             "type/unit SUM" per sample type
//	pprofcheck merge OUT FILE...       profile.Merge, written gzip'd to OUT
//	pprofcheck delta OUT BASE NEW      base.Scale(-1) + Merge([new, base])
//	                                   (what `go tool pprof -proto -base` does)
//	pprofcheck compact OUT FILE        p.Compact()
//	pprofcheck scale OUT RATIO FILE    p.Scale(RATIO) + Compact()
//
// OUT may be "-" for stdout. Exit status 1 with a message on stderr if a
// profile does not parse or validate.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
)

func die(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "pprofcheck: "+format+"\n", a...)
	os.Exit(1)
}

func load(path string) *profile.Profile {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			die("%v", err)
		}
		defer f.Close()
		r = f
	}
	p, err := profile.Parse(r)
	if err != nil {
		die("%s: %v", path, err)
	}
	return p
}

func save(path string, p *profile.Profile) {
	if err := p.CheckValid(); err != nil {
		die("result invalid: %v", err)
	}
	var w io.Writer = os.Stdout
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			die("%v", err)
		}
		defer func() {
			if err := f.Close(); err != nil {
				die("%v", err)
			}
		}()
		w = f
	}
	if err := p.Write(w); err != nil {
		die("write %s: %v", path, err)
	}
}

func merge(ps []*profile.Profile) *profile.Profile {
	m, err := profile.Merge(ps)
	if err != nil {
		die("merge: %v", err)
	}
	return m
}

func vt(v *profile.ValueType) string {
	if v == nil {
		return "<nil>"
	}
	return v.Type + "/" + v.Unit
}

// dump prints every field that profile.proto carries (as the 2021 profile
// package models it), with ids, in table order.
func dump(p *profile.Profile) {
	fmt.Printf("sample_types:")
	for _, st := range p.SampleType {
		fmt.Printf(" %s", vt(st))
	}
	fmt.Printf("\nperiod_type: %s\nperiod: %d\ntime_nanos: %d\nduration_nanos: %d\n",
		vt(p.PeriodType), p.Period, p.TimeNanos, p.DurationNanos)
	fmt.Printf("default_sample_type: %q\ndrop_frames: %q\nkeep_frames: %q\n",
		p.DefaultSampleType, p.DropFrames, p.KeepFrames)
	for _, c := range p.Comments {
		fmt.Printf("comment: %q\n", c)
	}
	for _, m := range p.Mapping {
		fmt.Printf("mapping %d: 0x%x-0x%x off=0x%x file=%q buildid=%q flags=%v%v%v%v\n",
			m.ID, m.Start, m.Limit, m.Offset, m.File, m.BuildID,
			b01(m.HasFunctions), b01(m.HasFilenames), b01(m.HasLineNumbers), b01(m.HasInlineFrames))
	}
	for _, f := range p.Function {
		fmt.Printf("function %d: name=%q system=%q file=%q start=%d\n",
			f.ID, f.Name, f.SystemName, f.Filename, f.StartLine)
	}
	for _, l := range p.Location {
		mid := uint64(0)
		if l.Mapping != nil {
			mid = l.Mapping.ID
		}
		fmt.Printf("location %d: m=%d addr=0x%x folded=%v lines=[", l.ID, mid, l.Address, l.IsFolded)
		for i, ln := range l.Line {
			if i > 0 {
				fmt.Printf(" ")
			}
			fid := uint64(0)
			if ln.Function != nil {
				fid = ln.Function.ID
			}
			fmt.Printf("%d:%d", fid, ln.Line)
		}
		fmt.Printf("]\n")
	}
	for i, s := range p.Sample {
		ids := make([]string, len(s.Location))
		for j, l := range s.Location {
			ids[j] = strconv.FormatUint(l.ID, 10)
		}
		fmt.Printf("sample %d: locs=[%s] values=%v labels=%s\n", i,
			strings.Join(ids, " "), s.Value, labelString(s))
	}
}

func b01(b bool) int {
	if b {
		return 1
	}
	return 0
}

// labelString renders a sample's labels canonically: keys sorted, values
// in their order, numeric labels with units.
func labelString(s *profile.Sample) string {
	var parts []string
	keys := make([]string, 0, len(s.Label))
	for k := range s.Label {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%q=%q", k, s.Label[k]))
	}
	keys = keys[:0]
	for k := range s.NumLabel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%q#%v%q", k, s.NumLabel[k], s.NumUnit[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// locString identifies a location without ids: its address relative to
// the mapping start plus the mapping's file/build id, and its lines.
func locString(l *profile.Location) string {
	var b strings.Builder
	if l.Mapping != nil {
		fmt.Fprintf(&b, "%s+0x%x", mapName(l.Mapping), l.Address-l.Mapping.Start)
	} else {
		fmt.Fprintf(&b, "0x%x", l.Address)
	}
	if l.IsFolded {
		b.WriteString("[folded]")
	}
	for _, ln := range l.Line {
		if ln.Function != nil {
			fmt.Fprintf(&b, "(%s %s:%d)", ln.Function.Name, ln.Function.Filename, ln.Line)
		} else {
			fmt.Fprintf(&b, "(? :%d)", ln.Line)
		}
	}
	return b.String()
}

func mapName(m *profile.Mapping) string {
	if m.BuildID != "" {
		return m.BuildID
	}
	if m.File != "" {
		return m.File
	}
	return "?"
}

// samples prints one line per sample, sorted: header lines first (starting
// with '#'), then "loc;loc;...|labels -> v1 v2 ...".
func samples(p *profile.Profile) {
	fmt.Printf("# sample_types:")
	for _, st := range p.SampleType {
		fmt.Printf(" %s", vt(st))
	}
	fmt.Printf("\n# period: %s %d\n", vt(p.PeriodType), p.Period)
	lines := make([]string, 0, len(p.Sample))
	for _, s := range p.Sample {
		locs := make([]string, len(s.Location))
		for i, l := range s.Location {
			locs[i] = locString(l)
		}
		vals := make([]string, len(s.Value))
		for i, v := range s.Value {
			vals[i] = strconv.FormatInt(v, 10)
		}
		lines = append(lines, strings.Join(locs, ";")+"|"+labelString(s)+" -> "+strings.Join(vals, " "))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
}

func totals(p *profile.Profile) {
	sums := make([]int64, len(p.SampleType))
	for _, s := range p.Sample {
		for i, v := range s.Value {
			sums[i] += v
		}
	}
	for i, st := range p.SampleType {
		fmt.Printf("%s %d\n", vt(st), sums[i])
	}
	fmt.Printf("samples %d\n", len(p.Sample))
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: pprofcheck check|dump|samples|totals FILE
       pprofcheck merge OUT FILE...
       pprofcheck delta OUT BASE NEW
       pprofcheck compact OUT FILE
       pprofcheck scale OUT RATIO FILE`)
	os.Exit(2)
}

func main() {
	a := os.Args[1:]
	if len(a) < 2 {
		usage()
	}
	switch a[0] {
	case "check":
		fmt.Print(load(a[1]).String())
	case "dump":
		dump(load(a[1]))
	case "samples":
		samples(load(a[1]))
	case "totals":
		totals(load(a[1]))
	case "merge":
		if len(a) < 3 {
			usage()
		}
		var ps []*profile.Profile
		for _, f := range a[2:] {
			ps = append(ps, load(f))
		}
		save(a[1], merge(ps))
	case "delta":
		if len(a) != 4 {
			usage()
		}
		base, cur := load(a[2]), load(a[3])
		base.Scale(-1)
		save(a[1], merge([]*profile.Profile{cur, base}))
	case "compact":
		if len(a) != 3 {
			usage()
		}
		save(a[1], load(a[2]).Compact())
	case "scale":
		if len(a) != 4 {
			usage()
		}
		r, err := strconv.ParseFloat(a[2], 64)
		if err != nil {
			die("bad ratio %q", a[2])
		}
		p := load(a[3])
		p.Scale(r)
		save(a[1], p.Compact())
	default:
		usage()
	}
}
