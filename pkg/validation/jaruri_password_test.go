package validation

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestJarURIErrorsHideThePassword: the field errors quoting a jarURI (webhook answers, status)
// show it without the password of its user info.
func TestJarURIErrorsHideThePassword(t *testing.T) {
	v := &Validator{}
	for _, uri := range []string{"s3://deploy:s3cr3t-pass@bucket/job.jar", "https://deploy:s3cr3t-pass@127.0.0.1/job.jar",
		"https://deploy:s3cr3t-pass@bad host/job.jar"} {
		errs := v.validateJarURI(context.Background(), field.NewPath("spec", "job", "jarURI"), uri)
		require.NotEmpty(t, errs, uri)
		assert.NotContains(t, errs.ToAggregate().Error(), "s3cr3t-pass", uri)
		assert.Contains(t, errs.ToAggregate().Error(), "deploy:", uri)
	}
}
