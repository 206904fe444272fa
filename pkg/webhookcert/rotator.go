package webhookcert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// DefaultInterval is how often a Rotator looks at its objects once in sync: it renews what is
// due and puts back a CA bundle that an apply or an edit removed.
const DefaultInterval = time.Minute

// Rotator keeps the webhook serving certificate of one operator replica. Every replica runs
// one (the webhook server of every replica needs the files); they share the Secret, and the
// optimistic concurrency of its updates makes one of them issue while the others adopt it.
type Rotator struct {
	// Client reads and writes the Secret and the targets directly (no cache: the Secret and
	// the targets are read by name only, which keeps the RBAC to resourceNames).
	Client client.Client
	// Secret holds the CA and the serving pair; it must exist (config/default ships it empty),
	// since creation cannot be restricted to one name by RBAC.
	Secret types.NamespacedName
	// Service is what the webhooks are called through; the certificate carries its DNS names.
	Service Service
	// Targets get the CA bundle.
	Targets []Target
	// CertDir receives tls.crt and tls.key for the webhook server.
	CertDir string
	// Policy defaults to DefaultPolicy, Interval to DefaultInterval.
	Policy   Policy
	Interval time.Duration
	Log      logr.Logger
	// Now defaults to time.Now.
	Now func() time.Time

	once                  sync.Once
	certReady             chan struct{} // closed once tls.crt and tls.key are written
	synced                chan struct{} // closed after the first complete sync
	readyOnce, syncedOnce sync.Once
}

func (r *Rotator) init() {
	r.once.Do(func() {
		r.certReady, r.synced = make(chan struct{}), make(chan struct{})
	})
}

// CertReady is closed once the serving certificate is in CertDir.
func (r *Rotator) CertReady() <-chan struct{} {
	r.init()
	return r.certReady
}

// ReadyCheck fails until the certificate is in CertDir and the CA bundle is in every target.
func (r *Rotator) ReadyCheck() healthz.Checker {
	r.init()
	return func(*http.Request) error {
		select {
		case <-r.synced:
			return nil
		default:
			return errors.New("webhook serving certificate not issued or its CA not injected yet")
		}
	}
}

// NeedLeaderElection is false: every replica serves webhooks and needs the files.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start syncs until ctx ends: at once, then every Interval, and sooner (backing off from one
// second) while a sync fails, e.g. before `kubectl apply` has created the webhook
// configurations. Failures are logged, never fatal: the webhooks of a replica that had a
// certificate keep being served.
func (r *Rotator) Start(ctx context.Context) error {
	r.init()
	interval := r.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	backoff := time.Second
	for {
		wait := interval
		if err := r.Sync(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.Log.Error(err, "webhook certificate sync failed; retrying", "in", backoff)
			wait, backoff = backoff, min(2*backoff, interval)
		} else {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Sync makes one pass: renew the Secret's certificates if due, put the CA bundle into every
// target, then write the serving pair to CertDir. The bundle goes in before the files change,
// so a replica never serves a certificate the API server does not trust yet.
func (r *Rotator) Sync(ctx context.Context) error {
	r.init()
	if r.Client == nil || r.Secret.Name == "" || r.Secret.Namespace == "" || r.CertDir == "" {
		return errors.New("webhook certificate rotator: Client, Secret (name and namespace) and CertDir are required")
	}
	data, err := r.ensureSecret(ctx)
	if err != nil {
		return err
	}
	for _, t := range r.Targets {
		if err := r.inject(ctx, t, data[KeyCABundle]); err != nil {
			return err
		}
	}
	if err := writeFiles(r.CertDir, map[string][]byte{KeyServingCert: data[KeyServingCert], KeyServingKey: data[KeyServingKey]}); err != nil {
		return fmt.Errorf("write serving certificate to %s: %w", r.CertDir, err)
	}
	r.readyOnce.Do(func() { close(r.certReady) })
	r.syncedOnce.Do(func() {
		r.Log.Info("webhook serving certificate in place", "secret", r.Secret.String(), "certDir", r.CertDir, "targets", len(r.Targets))
		close(r.synced)
	})
	return nil
}

// ensureSecret returns the Secret's data after renewing what is due. When another replica
// updated the Secret first, its certificates are read back and used.
func (r *Rotator) ensureSecret(ctx context.Context) (map[string][]byte, error) {
	policy := r.Policy
	if policy == (Policy{}) {
		policy = DefaultPolicy
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	var data map[string][]byte
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var secret corev1.Secret
		if err := r.Client.Get(ctx, r.Secret, &secret); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("secret %s not found: it is part of the install (config/default), the operator does not create it: %w", r.Secret, err)
			}
			return fmt.Errorf("get secret %s: %w", r.Secret, err)
		}
		next, reason, err := Ensure(secret.Data, r.Service.DNSNames(), now(), policy)
		if err != nil {
			return fmt.Errorf("secret %s: %w", r.Secret, err)
		}
		if reason == ReasonUpToDate {
			data = next
			return nil
		}
		secret.Data = next
		if err := r.Client.Update(ctx, &secret); err != nil {
			return err // a conflict retries with the other replica's certificates
		}
		r.Log.Info("webhook certificates updated", "secret", r.Secret.String(), "reason", string(reason))
		data = next
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("update secret %s: %w", r.Secret, err)
	}
	return data, nil
}

// inject puts the CA bundle into one target.
func (r *Rotator) inject(ctx context.Context, t Target, bundle []byte) error {
	gvk, ok := kindGVK[t.Kind]
	if !ok {
		return fmt.Errorf("target %s: unknown kind", t)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		if err := r.Client.Get(ctx, client.ObjectKey{Name: t.Name}, obj); err != nil {
			return fmt.Errorf("get %s: %w", t, err)
		}
		changed, err := Inject(obj, t.Kind, r.Service, bundle)
		if err != nil || !changed {
			return err
		}
		// Another replica may have renewed the CA since this one read the Secret, and
		// injected the new bundle already: putting this older one back would leave its new
		// serving certificate untrusted. Read after the target, so that a renewal injected
		// after this check makes the update below conflict and come back here.
		if err := r.bundleStillCurrent(ctx, bundle); err != nil {
			return err
		}
		if err := r.Client.Update(ctx, obj); err != nil {
			return fmt.Errorf("update %s: %w", t, err)
		}
		r.Log.Info("CA bundle injected", "target", t.String())
		return nil
	})
}

// errBundleChanged: the Secret's CA bundle is no longer the one being injected.
var errBundleChanged = errors.New("the CA bundle in the Secret changed (another replica renewed it); the next pass injects the new one")

// bundleStillCurrent fails when the Secret's CA bundle is no longer bundle.
func (r *Rotator) bundleStillCurrent(ctx context.Context, bundle []byte) error {
	var secret corev1.Secret
	if err := r.Client.Get(ctx, r.Secret, &secret); err != nil {
		return fmt.Errorf("get secret %s: %w", r.Secret, err)
	}
	if !bytes.Equal(secret.Data[KeyCABundle], bundle) {
		return errBundleChanged
	}
	return nil
}

// writeFiles writes each file that differs, through a temporary file and a rename, so the
// webhook server's certificate watcher never reads half a file. The key is written first: a
// reload between the two renames fails on the mismatched pair and keeps the old one.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{KeyServingKey, KeyServingCert} {
		content := files[name]
		path := filepath.Join(dir, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
			continue
		}
		tmp, err := os.CreateTemp(dir, "."+name+"-")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(content)
		cerr := tmp.Close()
		if err := errors.Join(werr, cerr); err != nil {
			_ = os.Remove(tmp.Name())
			return err
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			_ = os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}
