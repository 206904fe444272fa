// Package validator runs custom validators: rules of an organisation's own (quotas, naming,
// cost limits) that a FlinkDeployment, FlinkSessionJob or FlinkStateSnapshot must also follow.
// They are HTTP endpoints listed in the operator configuration (kubernetes.operator.extension.
// validators, read at every call so a changed ConfigMap applies at once) or Go values for those
// who embed the controllers in a binary of their own. The admission webhook and the reconcilers
// both ask them, so with the webhook off the same spec is refused with the same field errors.
//
// The wire format (ValidationRequest, ValidationResponse) is versioned by APIVersion; the
// docs/concepts/extensions.md documents it.
package validator

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-operator/flink-operator/pkg/extension/endpoint"
	"github.com/flink-operator/flink-operator/pkg/options"
)

// Operation is why a resource is validated.
type Operation string

const (
	// Create and Update are the admission webhook's requests.
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	// Reconcile is the reconciler's check of a generation it has not reconciled yet; OldObject
	// then carries the spec reconciled last (none before the first deployment).
	Reconcile Operation = "RECONCILE"
)

// Request is the resource a validator judges.
type Request struct {
	Operation Operation
	// Kind is FlinkDeployment, FlinkSessionJob or FlinkStateSnapshot.
	Kind string
	// Object is the resource as it would be stored; OldObject the previous version (nil on
	// create). Validators must not modify them.
	Object, OldObject client.Object
}

// Validator judges a resource beyond the operator's own rules. It returns the violations it
// found (none: allowed), or an error when it could not decide, to which the validator's
// failure policy applies.
type Validator interface {
	Validate(ctx context.Context, req Request) (field.ErrorList, error)
}

// Func adapts a function to Validator.
type Func func(ctx context.Context, req Request) (field.ErrorList, error)

// Validate calls f.
func (f Func) Validate(ctx context.Context, req Request) (field.ErrorList, error) { return f(ctx, req) }

// Named is a Go validator and what its failure means.
type Named struct {
	Name          string
	Validator     Validator
	FailurePolicy endpoint.FailurePolicy
}

// Chain asks every validator configured now (the operator configuration's endpoints, then
// Embedded) concurrently and merges their answers. A validator that cannot answer refuses the
// resource under failure policy Fail (an internal error naming it) and is skipped under Ignore.
type Chain struct {
	// OperatorConfig returns the operator options in force (flinkconf.Defaults.Operator); nil: no
	// endpoints, Embedded only.
	OperatorConfig func() map[string]string
	Embedded       []Named
	// SecretKeyPatterns mark configuration keys whose values are never sent to an endpoint
	// (redact.DefaultKeyPatterns when nil).
	SecretKeyPatterns []string
	// OnFailure, when set, is told of every validator that could not answer (logs, metrics).
	OnFailure func(name string, policy endpoint.FailurePolicy, err error)

	mu sync.Mutex
	// built are the endpoints of the configuration text they were built from.
	builtFrom string
	built     []Named
	builtErr  error
	// decided remembers the reconciler's answers per resource generation (reconcileKey):
	// reconciles repeat every few seconds, validators are asked once per generation.
	decided map[reconcileKey]field.ErrorList
}

type reconcileKey struct {
	kind, uid, config string
	generation        int64
}

// maxDecided bounds the remembered answers; beyond it they are forgotten all at once (asked
// again on the next reconcile of each resource).
const maxDecided = 10000

// Validate implements Validator: the merged violations, never an error (failure policies are
// applied here).
func (c *Chain) Validate(ctx context.Context, req Request) (field.ErrorList, error) {
	named, configText, cfgErr := c.validators()
	if cfgErr != nil {
		// A configuration that cannot be read is refused as a whole (operatorconfig rejects it
		// at load; this is the flags-only path): a validator the administrator asked for
		// cannot be assumed away.
		return field.ErrorList{field.InternalError(field.NewPath("spec"), fmt.Errorf("custom validators: %w", cfgErr))}, nil
	}
	if len(named) == 0 {
		return nil, nil
	}
	var key reconcileKey
	if req.Operation == Reconcile && req.Object != nil {
		key = reconcileKey{kind: req.Kind, uid: string(req.Object.GetUID()), generation: req.Object.GetGeneration(), config: configText}
		c.mu.Lock()
		errs, ok := c.decided[key]
		c.mu.Unlock()
		if ok {
			return errs, nil
		}
	}
	type answer struct {
		errs field.ErrorList
		err  error
	}
	answers := make([]answer, len(named))
	var wg sync.WaitGroup
	for i, n := range named {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs, err := n.Validator.Validate(ctx, req)
			answers[i] = answer{errs, err}
		}()
	}
	wg.Wait()
	var out field.ErrorList
	failed := false
	for i, a := range answers {
		n := named[i]
		if a.err == nil {
			out = append(out, a.errs...)
			continue
		}
		failed = true
		if c.OnFailure != nil {
			c.OnFailure(n.Name, n.FailurePolicy, a.err)
		}
		if n.FailurePolicy != endpoint.Ignore {
			out = append(out, field.InternalError(field.NewPath("spec"),
				fmt.Errorf("custom validator %s did not answer (failurePolicy Fail): %w", n.Name, a.err)))
		}
	}
	if req.Operation == Reconcile && req.Object != nil && !failed {
		c.mu.Lock()
		if c.decided == nil || len(c.decided) >= maxDecided {
			c.decided = map[reconcileKey]field.ErrorList{}
		}
		c.decided[key] = out
		c.mu.Unlock()
	}
	return out, nil
}

// validators are the endpoints of the configuration in force, built again only when its text
// changed (their HTTP clients keep their connections), then the embedded ones.
func (c *Chain) validators() ([]Named, string, error) {
	var conf map[string]string
	if c.OperatorConfig != nil {
		conf = c.OperatorConfig()
	}
	text := endpointText(conf)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built == nil && c.builtErr == nil || text != c.builtFrom {
		c.builtFrom, c.built, c.builtErr = text, []Named{}, nil
		eps, err := endpoint.Validators(conf)
		if err == nil {
			for _, ep := range eps {
				var h *HTTP
				if h, err = NewHTTP(ep, c.SecretKeyPatterns); err != nil {
					break
				}
				c.built = append(c.built, Named{Name: ep.Name, Validator: kindFilter{ep, h}, FailurePolicy: ep.FailurePolicy})
			}
		}
		c.builtErr = err
	}
	if c.builtErr != nil {
		return nil, text, c.builtErr
	}
	return append(append([]Named{}, c.built...), c.Embedded...), text, nil
}

// endpointText is what the endpoints are built from.
func endpointText(conf map[string]string) string {
	return conf[options.ExtensionValidators.Key] + "\x00" + conf[options.ExtensionAllowedHosts.Key]
}

// kindFilter asks the endpoint about the kinds it is configured for only.
type kindFilter struct {
	ep endpoint.Validator
	v  Validator
}

func (k kindFilter) Validate(ctx context.Context, req Request) (field.ErrorList, error) {
	if !k.ep.Handles(req.Kind) {
		return nil, nil
	}
	return k.v.Validate(ctx, req)
}

// Run asks v (nil: nothing to ask) and turns an error into a refusal: a Validator that is not
// a Chain has no failure policy of its own, so its failure means Fail.
func Run(ctx context.Context, v Validator, req Request) field.ErrorList {
	if v == nil {
		return nil
	}
	errs, err := v.Validate(ctx, req)
	if err != nil {
		errs = append(errs, field.InternalError(field.NewPath("spec"), fmt.Errorf("custom validator did not answer: %w", err)))
	}
	return errs
}
