package autoscaler

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

// scaleCase is one random vertex and load for the bounds property.
type scaleCase struct {
	cur, maxP, partitions, vmin, vmax int
	hash                              bool
	busy, rate, lag                   float64
	upFactor, downFactor              float64
	mode                              string
	downInterval                      bool
}

// checkInBounds evaluates a source → vertex job and checks that every recommended and applied
// parallelism lies within [min(current, vertex.min-parallelism), min(max parallelism,
// max(current, vertex.max-parallelism))] and is positive.
func checkInBounds(t *testing.T, c scaleCase) {
	t.Helper()
	cfg := testConfig()
	cfg.VertexMinParallel, cfg.VertexMaxParallel = c.vmin, c.vmax
	cfg.ScaleUpMaxFactor, cfg.ScaleDownMaxFactor = c.upFactor, c.downFactor
	cfg.AlignmentMode = c.mode
	if c.downInterval {
		cfg.ScaleDownInterval = time.Minute
	}
	top := Topology{Vertices: []Vertex{
		{ID: src, Parallelism: c.cur, MaxParallelism: c.maxP, Source: true, SourcePartitions: c.partitions},
		{ID: mid, Parallelism: c.cur, MaxParallelism: c.maxP, Inputs: []VertexID{src}, HashInput: c.hash},
	}}
	s := fullState(samples(16, map[VertexID]load{src: {rate: c.rate, busy: c.busy, lag: c.lag}, mid: {rate: c.rate, busy: c.busy}}))
	for step := 0; step < 3; step++ {
		r := Evaluate(s.Samples[15].Time.Add(time.Duration(step)*2*time.Minute), top, s, cfg)
		for _, v := range top.Vertices {
			lower := min(v.Parallelism, c.vmin)
			upper := min(v.MaxParallelism, max(v.Parallelism, c.vmax))
			got := newParallelism(t, r, v.ID)
			if got < 1 || got < lower || got > upper {
				t.Fatalf("%+v: vertex %s recommended %d outside [%d, %d]", c, v.ID, got, lower, upper)
			}
			if p, ok := r.Overrides[v.ID]; ok && (p < 1 || p < lower || p > upper) {
				t.Fatalf("%+v: vertex %s override %d outside [%d, %d]", c, v.ID, p, lower, upper)
			}
		}
		s.DelayedScaleDown = r.State.DelayedScaleDown
	}
}

func randomCase(r *rand.Rand) scaleCase {
	maxP := 1 + r.Intn(1000)
	vmin := 1 + r.Intn(50)
	c := scaleCase{
		cur:          1 + r.Intn(maxP),
		maxP:         maxP,
		vmin:         vmin,
		vmax:         vmin + r.Intn(400),
		hash:         r.Intn(2) == 0,
		busy:         r.Float64() * 1000,
		rate:         math.Pow(10, r.Float64()*7) * float64(r.Intn(2)),
		upFactor:     r.Float64() * 10,
		downFactor:   r.Float64(),
		mode:         []string{AlignBalanced, AlignEvenlySpread, AlignOff, alignLegacyEvenlySpread, alignLegacyMaximizeUtilis}[r.Intn(5)],
		downInterval: r.Intn(2) == 0,
	}
	if r.Intn(2) == 0 {
		c.partitions = 1 + r.Intn(300)
	}
	if r.Intn(3) == 0 {
		c.lag = r.Float64() * 1e9
	}
	return c
}

// TestParallelismAlwaysInBounds is the property over many random vertices and loads.
func TestParallelismAlwaysInBounds(t *testing.T) {
	r := rand.New(rand.NewSource(18))
	for i := 0; i < 3000; i++ {
		checkInBounds(t, randomCase(r))
	}
}

// FuzzParallelismInBounds lets `go test -fuzz` search further; the seeds run with every test.
func FuzzParallelismInBounds(f *testing.F) {
	f.Add(4, 128, 0, 1, 200, true, 900.0, 1000.0, 0.0, 100000.0, 0.6, uint8(0), false)
	f.Add(3, 7, 10, 5, 6, false, 10.0, 1e6, 1e8, 0.5, 1.0, uint8(3), true)
	f.Add(1, 1, 0, 50, 60, true, 1000.0, 0.0, 0.0, 2.0, 0.0, uint8(4), false)
	f.Fuzz(func(t *testing.T, cur, maxP, partitions, vmin, vmax int, hash bool, busy, rate, lag, up, down float64, mode uint8, interval bool) {
		if maxP < 1 || maxP > 32768 || cur < 1 || cur > maxP || vmin < 1 || vmin > 1000 || vmax < vmin || vmax > 32768 || partitions < 0 || partitions > 100000 {
			return
		}
		for _, x := range []float64{busy, rate, lag, up, down} {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return
			}
		}
		if busy > 1000 || down > 1 || rate > 1e12 || lag > 1e15 || up > 1e6 {
			return
		}
		modes := []string{AlignBalanced, AlignEvenlySpread, AlignOff, alignLegacyEvenlySpread, alignLegacyMaximizeUtilis}
		checkInBounds(t, scaleCase{cur: cur, maxP: maxP, partitions: partitions, vmin: vmin, vmax: vmax, hash: hash, busy: busy, rate: rate, lag: lag,
			upFactor: up, downFactor: down, mode: modes[int(mode)%len(modes)], downInterval: interval})
	})
}
