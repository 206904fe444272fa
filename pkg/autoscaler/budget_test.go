package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// zeroList is the memory bomb: a list of 0 that decompresses to size bytes from a few tens of
// kilobytes of gzip.
func zeroList(size int) string {
	return "x: [" + strings.Repeat("0,", size/2) + "0]\n"
}

// exponentKeys is the CPU bomb: n keys that are numbers with huge exponents, each of which a
// big-number parser spends milliseconds on, as instants of the map given by wrap.
func exponentKeys(n int, line func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(line(i))
	}
	return b.String()
}

// bombs are autoscaler-<name> ConfigMaps that cost the old decoder gigabytes or seconds.
func bombs() map[string]map[string]string {
	cpuTracking := "scalingRecords:\n" + exponentKeys(300, func(i int) string { return fmt.Sprintf("  %de-999999: {}\n", i) })
	cpuMetrics := exponentKeys(300, func(i int) string { return fmt.Sprintf("%de-999999: {}\n", i) })
	cpuDuration := "scalingRecords:\n" + exponentKeys(300, func(i int) string {
		return fmt.Sprintf("  \"2026-11-25T10:%02d:%02dZ\":\n    restartDuration: 1e-999999\n", i/60, i%60)
	})
	cpuDelayed := "delayedVertices:\n" + exponentKeys(300, func(i int) string {
		return fmt.Sprintf("  v%d:\n    firstTriggerTime: 1e-999999\n", i)
	})
	// Many distinct keys where any name is accepted (a vertex's metrics): a YAML decoder that
	// looks for duplicate keys pairwise spends seconds on them (quadratic in the keys).
	var manyKeys strings.Builder
	manyKeys.WriteString("\"2026-11-25T10:00:00Z\":\n  vertexMetrics:\n    v:\n")
	for i := 0; i < 12000; i++ {
		fmt.Fprintf(&manyKeys, "      m%d: 0\n", i)
	}
	return map[string]map[string]string{
		"gzip collectedMetrics":  {KeyCollectedMetrics: compress(zeroList(20 << 20))},
		"gzip scalingHistory":    {KeyScalingHistory: compress(zeroList(20 << 20))},
		"gzip scalingTracking":   {KeyScalingTracking: compress(zeroList(20 << 20))},
		"exponent instant keys":  {KeyScalingTracking: compress(cpuTracking)},
		"exponent sample keys":   {KeyCollectedMetrics: compress(cpuMetrics)},
		"exponent durations":     {KeyScalingTracking: compress(cpuDuration)},
		"exponent instants":      {KeyDelayedScaleDown: cpuDelayed},
		"many distinct keys":     {KeyCollectedMetrics: compress(manyKeys.String())},
		"plain list":             {KeyDelayedScaleDown: zeroList(256 << 10)},
		"deep nesting":           {KeyDelayedScaleDown: strings.Repeat("- ", 9000) + "0\n"},
		"deep flow":              {KeyScalingTracking: compress(strings.Repeat("[", 9000) + strings.Repeat("]", 9000))},
		"aliases":                {KeyDelayedScaleDown: "a: &a [0,0,0,0,0,0,0,0,0,0]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\ndelayedVertices: {v: {recommendedParallelisms: [*c,*c,*c,*c,*c,*c,*c,*c]}}\n"},
		"overrides at the limit": {KeyParallelismOverrides: strings.Repeat("a:1,", 20000) + "a:1"},
	}
}

// mayBeRead are the bombs that are well-formed states within the default budget: read, cheaply.
var mayBeRead = map[string]bool{"many distinct keys": true, "overrides at the limit": true}

// decodeCost decodes and returns the time taken, the bytes allocated and the error. The time is
// the process's CPU time (user and system, GC included) when it is less than the wall time: the
// machines running the tests are shared, and waiting for a core is not the decoder's cost.
func decodeCost(decode func() (State, error)) (State, time.Duration, uint64, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	start := time.Now()
	s, err := decode()
	took := time.Since(start)
	if cpu := cpuTime() - cpu0; cpu < took {
		took = cpu
	}
	runtime.ReadMemStats(&after)
	return s, took, after.TotalAlloc - before.TotalAlloc, err
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.MaxInt64
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestDecodeStateBombs: each bomb is read or refused in under 100 ms and 32 MiB, and a refusal
// names the entry and says what is wrong with it. The old decoder took 2.4 GiB and 9 s for the
// gzip bombs and 7 s for 300 exponent keys.
func TestDecodeStateBombs(t *testing.T) {
	for name, data := range bombs() {
		t.Run(name, func(t *testing.T) {
			var key string
			for k := range data {
				key = k
			}
			if len(data[key]) > 1<<20 {
				t.Fatalf("bomb of %d bytes does not fit a ConfigMap", len(data[key]))
			}
			// Best of three: the machine running the tests is shared.
			var took time.Duration
			var alloc uint64
			var err error
			for i := 0; i < 3; i++ {
				_, tk, a, e := decodeCost(func() (State, error) { return DecodeState(data) })
				if i == 0 || tk < took {
					took = tk
				}
				if i == 0 || a < alloc {
					alloc = a
				}
				err = e
			}
			t.Logf("%d bytes: %v, %d KiB allocated, error: %v", len(data[key]), took, alloc>>10, err)
			if took > 100*time.Millisecond {
				t.Errorf("took %v", took)
			}
			if alloc > 32<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
			if err != nil && !strings.Contains(err.Error(), key+": ") {
				t.Errorf("error %q does not name the entry %s", err, key)
			}
			if err == nil && !mayBeRead[name] {
				t.Errorf("bomb accepted")
			}
		})
	}
}

// TestDecodeStateRefusalsSayWhy: the errors of the two state bombs say which bound was
// passed.
func TestDecodeStateRefusalsSayWhy(t *testing.T) {
	b := bombs()
	_, err := DecodeState(b["gzip collectedMetrics"])
	if err == nil || !strings.Contains(err.Error(), "collectedMetrics: over the autoscaler state budget: decompresses to more than 4194304 bytes") {
		t.Errorf("gzip bomb: %v", err)
	}
	_, err = DecodeState(b["exponent durations"])
	if err == nil || !strings.Contains(err.Error(), `scalingTracking: line 3: restartDuration: "1e-999999" is not a number of seconds (want digits with at most 9 decimals, no exponent)`) {
		t.Errorf("exponent bomb: %v", err)
	}
	_, err = DecodeState(b["aliases"])
	if err == nil || !strings.Contains(err.Error(), "delayedScaleDown: line 1: YAML anchors and aliases are not allowed") {
		t.Errorf("alias bomb: %v", err)
	}
}

// TestDecodeStateOperatorBudget: the operator's budget applies (a smaller one refuses what the
// default reads), and the rest of the state is still read.
func TestDecodeStateOperatorBudget(t *testing.T) {
	data := upstreamConfigMap(t, true)
	if _, err := DecodeStateWithin(context.Background(), data, Limits{}); err != nil {
		t.Fatal(err)
	}
	s, err := DecodeStateWithin(context.Background(), data, Limits{MaxEntryNodes: 500})
	if err == nil || !strings.Contains(err.Error(), "collectedMetrics: over the autoscaler state budget: up to ") || !strings.Contains(err.Error(), "YAML nodes, more than 500") {
		t.Fatalf("node budget: %v", err)
	}
	if len(s.Samples) != 0 || len(s.History[mid]) != 1 || s.Overrides[mid] != 1 {
		t.Errorf("the entries within the budget were not read: %d samples, history %v, overrides %v", len(s.Samples), s.History, s.Overrides)
	}
	if _, err := DecodeStateWithin(context.Background(), data, Limits{MaxEntryBytes: 1000}); err == nil || !strings.Contains(err.Error(), "decompresses to more than 1000 bytes") {
		t.Errorf("byte budget: %v", err)
	}
}

// TestDecodeStateHonoursContext: a reconcile whose deadline has passed gets its context's error,
// not a state.
func TestDecodeStateHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := DecodeStateWithin(ctx, upstreamConfigMap(t, true), Limits{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	// Cancelled between entries: the decode stops at the next check.
	data := upstreamConfigMap(t, true)
	ctx, cancel = context.WithCancel(context.Background())
	calls := 0
	_, err = DecodeStateWithin(cancelAfter{ctx, &calls, 3, cancel}, data, Limits{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled during the decode: %v", err)
	}
}

// cancelAfter is a context that is cancelled after its error was asked for n times.
type cancelAfter struct {
	context.Context
	calls  *int
	n      int
	cancel context.CancelFunc
}

func (c cancelAfter) Err() error {
	if *c.calls++; *c.calls == c.n {
		c.cancel()
	}
	return c.Context.Err()
}

// TestDecodeStateAtTheBudget: the largest state the default budget admits (an encoding the
// operator itself wrote, trimmed to the budget) is read in bounded memory.
func TestDecodeStateAtTheBudget(t *testing.T) {
	s := State{}
	for i := 0; i < 400; i++ {
		smp := Sample{Time: t0.Add(time.Duration(i) * 10 * time.Second), Vertices: map[VertexID]VertexSample{}, HeapUsedRatio: 0.5, GCTimeMsPerSecond: 1}
		for v := 0; v < 60; v++ {
			smp.Vertices[VertexID(randomHex(v))] = VertexSample{BusyTimeMsPerSecond: float64(i*v%997) + 0.123456789, RecordsInPerSecond: float64(i*v) * 1.0000001, HasPendingRecords: true}
		}
		s.Samples = append(s.Samples, smp)
	}
	data, _ := s.Encode()
	text := decompress(data[KeyCollectedMetrics])
	n, err := scanYAML(text)
	if err != nil || n > DefaultMaxEntryNodes || n < DefaultMaxEntryNodes*9/10 {
		t.Fatalf("encoding is not at the budget: %d nodes, %v", n, err)
	}
	back, took, alloc, err := decodeCost(func() (State, error) { return DecodeState(data) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples of 60 vertices, %d bytes of YAML: %v, %d MiB", len(back.Samples), len(text), took, alloc>>20)
	if len(back.Samples) < 10 || !back.Samples[len(back.Samples)-1].Time.Equal(s.Samples[len(s.Samples)-1].Time) {
		t.Errorf("kept %d samples; the newest must stay", len(back.Samples))
	}
	if alloc > 32<<20 {
		t.Errorf("allocated %d MiB", alloc>>20)
	}
}

func TestNumberGrammar(t *testing.T) {
	doubles := map[string]float64{
		"0.0": 0, "-1.5": -1.5, "5.36870912E8": 5.36870912e8, "1.0E-5": 1e-5, "4.9E-324": 4.9e-324, "1.7976931348623157E308": math.MaxFloat64,
		"12": 12, "+3.25": 3.25, "Infinity": math.Inf(1), "-Infinity": math.Inf(-1),
	}
	for in, want := range doubles {
		if got, err := parseJavaDouble(in); err != nil || got != want {
			t.Errorf("double %q: %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"1e-999999", "1E1000", "0x10", "1_000", "", ".", "-", "1.0E", strings.Repeat("1", 40), "1.0.0", "NaNx"} {
		if _, err := parseJavaDouble(in); err == nil {
			t.Errorf("double %q accepted", in)
		}
	}
	seconds := map[string]time.Duration{
		"42.500000000": 42500 * time.Millisecond, "1795607400.123000000": 1795607400*time.Second + 123*time.Millisecond,
		"0": 0, "-1.5": -1500 * time.Millisecond, "7.000000001": 7*time.Second + 1,
	}
	for in, want := range seconds {
		if got, err := parseDecimalSeconds(in); err != nil || got != want {
			t.Errorf("seconds %q: %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"1e-999999", "1E3", "1.0000000001", "99999999999", "9999999999", ".5", "5.", "", "1/2", "0x1"} {
		if _, err := parseDecimalSeconds(in); err == nil {
			t.Errorf("seconds %q accepted", in)
		}
	}
	// Instants are kept as durations since the epoch: those beyond would not be written back.
	for _, in := range []string{"0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "-9223372035", "1e9"} {
		if _, err := parseInstant(in); err == nil {
			t.Errorf("instant %q accepted", in)
		}
	}
	if got, err := parseInstant("2026-11-25T11:45:00.25Z"); err != nil || !got.Equal(time.Date(2026, 11, 25, 11, 45, 0, 250e6, time.UTC)) {
		t.Errorf("ISO instant: %v, %v", got, err)
	}
}

// FuzzDecodeState: any ConfigMap content is read or refused within bounded time and memory, and
// what is read encodes and reads back.
func FuzzDecodeState(f *testing.F) {
	// The bombs of TestDecodeStateBombs are seeds too, in testdata/fuzz/FuzzDecodeState
	// (TestFuzzSeedsAreTheBombs keeps them the same).
	up, err := os.ReadDir(filepath.Join("testdata", "upstream"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range up {
		b, err := os.ReadFile(filepath.Join("testdata", "upstream", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		key := strings.TrimSuffix(e.Name(), ".yaml")
		f.Add(key, string(b))
		if key != KeyDelayedScaleDown {
			f.Add(key, compress(string(b)))
		}
	}
	keys := []string{KeyCollectedMetrics, KeyScalingHistory, KeyScalingTracking, KeyDelayedScaleDown, KeyParallelismOverrides}
	l := Limits{MaxEntryBytes: 1 << 20, MaxEntryNodes: 20000}
	f.Fuzz(func(t *testing.T, key, value string) {
		for _, k := range keys {
			if strings.EqualFold(k, key) {
				key = k
			}
		}
		start := time.Now()
		s, err := DecodeStateWithin(context.Background(), map[string]string{key: value}, l)
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("%s of %d bytes took %v", key, len(value), took)
		}
		if err != nil && !strings.Contains(err.Error(), key+": ") {
			t.Fatalf("error %q does not name %s", err, key)
		}
		if err != nil {
			return
		}
		data, _ := s.Encode()
		if _, err := DecodeState(data); err != nil {
			t.Fatalf("our encoding of a state read from %s does not read back: %v", key, err)
		}
	})
}

// TestFuzzSeedsAreTheBombs: every bomb is a seed of FuzzDecodeState, committed under testdata/fuzz.
// UPDATE_FUZZ_SEEDS=1 rewrites them.
func TestFuzzSeedsAreTheBombs(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeState")
	for name, data := range bombs() {
		for k, v := range data {
			file := filepath.Join(dir, "bomb-"+strings.ReplaceAll(name, " ", "-"))
			want := fmt.Sprintf("go test fuzz v1\nstring(%q)\nstring(%q)\n", k, v)
			if os.Getenv("UPDATE_FUZZ_SEEDS") != "" {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(file)
			if err != nil || string(got) != want {
				t.Errorf("seed %s is missing or differs from the bomb (UPDATE_FUZZ_SEEDS=1 rewrites it): %v", file, err)
			}
		}
	}
}
