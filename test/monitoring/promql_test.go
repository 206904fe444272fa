package monitoring

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`absent(up{job="a"} == 1)`, []string{"up"}},
		{`sum by (controller) (rate(a_total{job="x"}[10m])) / sum by (controller) (rate(b_total[10m])) > 0.1`, []string{"a_total", "b_total"}},
		{`max without (instance, pod) (x{state=~"A|B"}) == 1`, []string{"x"}},
		{`time() - max(y) > 1e3 and on (namespace, kind, name) z == 1`, []string{"y", "z"}},
		{`label_replace(m, "dst", "$1", "src", "(.*)")`, []string{"m"}},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket{namespace=~"$namespace"}[$__rate_interval])))`, []string{"h_bucket"}},
		{`delta(max(s)[30m:]) > 0 unless ignoring(a) group_left(b) t offset 5m`, []string{"s", "t"}},
		{`count(k:recorded) * 2h30m`, []string{"k:recorded"}},
		{`sum(x{a="}"}) or vector(0)`, []string{"x"}},
		{`topk(5, q) by (a)`, []string{"q"}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := MetricNames(tt.expr)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	for _, bad := range []string{`up{job="a"`, `rate(x[5m)`, `x{a="b}`, `sum by (a x`} {
		_, err := MetricNames(bad)
		assert.Error(t, err, bad)
	}
}
