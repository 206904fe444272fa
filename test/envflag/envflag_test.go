package envflag

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSettingsFromTheEnvironment(t *testing.T) {
	t.Setenv("ENVFLAG_N", "")
	n, err := PositiveInt("ENVFLAG_N", 7)
	require.NoError(t, err)
	assert.Equal(t, 7, n, "empty: the default")
	t.Setenv("ENVFLAG_N", "12")
	n, err = PositiveInt("ENVFLAG_N", 7)
	require.NoError(t, err)
	assert.Equal(t, 12, n)
	for _, bad := range []string{"0", "-3", "ten"} {
		t.Setenv("ENVFLAG_N", bad)
		_, err = PositiveInt("ENVFLAG_N", 7)
		assert.EqualError(t, err, `ENVFLAG_N="`+bad+`": want a positive integer`)
	}

	t.Setenv("ENVFLAG_D", "90s")
	d, err := Duration("ENVFLAG_D", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 90*time.Second, d)
	t.Setenv("ENVFLAG_D", "soon")
	_, err = Duration("ENVFLAG_D", time.Minute)
	assert.EqualError(t, err, `ENVFLAG_D="soon": want a duration such as 60s`)

	t.Setenv("ENVFLAG_S", "")
	assert.Equal(t, "def", String("ENVFLAG_S", "def"))
	t.Setenv("ENVFLAG_S", "set")
	assert.Equal(t, "set", String("ENVFLAG_S", "def"))
}
