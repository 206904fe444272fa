package metricsauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiServer answers reviews as a scripted API server: tokens maps a token to its user, and
// allowed says which user may use which verb on which path; err fails every review.
type apiServer struct {
	mu             sync.Mutex
	tokens         map[string]authenticationv1.UserInfo
	allowed        map[string]bool // "user verb path"
	err            error
	tokenReviews   int
	accessReviews  int
	lastAccessSpec authorizationv1.SubjectAccessReviewSpec
}

func (s *apiServer) tokenReviewsClient() TokenReviews   { return tokenReviewFunc(s.reviewToken) }
func (s *apiServer) accessReviewsClient() AccessReviews { return accessReviewFunc(s.reviewAccess) }

type tokenReviewFunc func(*authenticationv1.TokenReview) (*authenticationv1.TokenReview, error)

func (f tokenReviewFunc) Create(_ context.Context, r *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	return f(r)
}

type accessReviewFunc func(*authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error)

func (f accessReviewFunc) Create(_ context.Context, r *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	return f(r)
}

func (s *apiServer) reviewToken(r *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenReviews++
	if s.err != nil {
		return nil, s.err
	}
	user, ok := s.tokens[r.Spec.Token]
	r.Status = authenticationv1.TokenReviewStatus{Authenticated: ok, User: user}
	return r, nil
}

func (s *apiServer) reviewAccess(r *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accessReviews++
	s.lastAccessSpec = r.Spec
	if s.err != nil {
		return nil, s.err
	}
	a := r.Spec.NonResourceAttributes
	if a == nil {
		return nil, errors.New("not a non-resource review")
	}
	r.Status.Allowed = s.allowed[r.Spec.User+" "+a.Verb+" "+a.Path]
	if !r.Status.Allowed {
		r.Status.Reason = "no RBAC policy matched"
	}
	return r, nil
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newGuard(t *testing.T, s *apiServer) (http.Handler, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	g := NewGuard(s.tokenReviewsClient(), s.accessReviewsClient(), c.now)
	h, err := g.Filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("metrics"))
	}))
	require.NoError(t, err)
	return h, c
}

func scrape(h http.Handler, method, path, authorization string) int {
	req := httptest.NewRequest(method, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func TestGuardAnswersAsTheAPIServerDecides(t *testing.T) {
	s := &apiServer{
		tokens: map[string]authenticationv1.UserInfo{
			"prometheus-token": {Username: "system:serviceaccount:monitoring:prometheus", Groups: []string{"system:serviceaccounts"}},
			"stranger-token":   {Username: "system:serviceaccount:tenant:stranger"},
		},
		allowed: map[string]bool{"system:serviceaccount:monitoring:prometheus get /metrics": true},
	}
	h, _ := newGuard(t, s)
	for _, tc := range []struct {
		name, method, path, authorization string
		want                              int
	}{
		{"no Authorization header", http.MethodGet, "/metrics", "", http.StatusUnauthorized},
		{"not a bearer token", http.MethodGet, "/metrics", "Basic cHJvbWV0aGV1czpzZWNyZXQ=", http.StatusUnauthorized},
		{"bearer without a token", http.MethodGet, "/metrics", "Bearer ", http.StatusUnauthorized},
		{"a token the API server does not know", http.MethodGet, "/metrics", "Bearer forged", http.StatusUnauthorized},
		{"a known user without the role", http.MethodGet, "/metrics", "Bearer stranger-token", http.StatusForbidden},
		{"the metrics reader", http.MethodGet, "/metrics", "Bearer prometheus-token", http.StatusOK},
		{"the scheme in another case", http.MethodGet, "/metrics", "bearer prometheus-token", http.StatusOK},
		{"the metrics reader on another path", http.MethodGet, "/debug", "Bearer prometheus-token", http.StatusForbidden},
		{"the metrics reader with another verb", http.MethodPost, "/metrics", "Bearer prometheus-token", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, scrape(h, tc.method, tc.path, tc.authorization))
		})
	}
	assert.Equal(t, authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:monitoring:prometheus", Groups: []string{"system:serviceaccounts"},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "post"},
	}, s.lastAccessSpec, "the review asks for the request's verb, lower case, on its path, for the user and its groups")
}

func TestGuardReusesAnswersForAWhile(t *testing.T) {
	s := &apiServer{
		tokens:  map[string]authenticationv1.UserInfo{"reader": {Username: "reader"}, "other": {Username: "other"}},
		allowed: map[string]bool{"reader get /metrics": true},
	}
	h, c := newGuard(t, s)

	require.Equal(t, http.StatusOK, scrape(h, http.MethodGet, "/metrics", "Bearer reader"))
	require.Equal(t, http.StatusOK, scrape(h, http.MethodGet, "/metrics", "Bearer reader"))
	assert.Equal(t, 1, s.tokenReviews, "the token's identity is reused")
	assert.Equal(t, 1, s.accessReviews, "the permission is reused")

	c.t = c.t.Add(authenticatedTTL + time.Second)
	require.Equal(t, http.StatusOK, scrape(h, http.MethodGet, "/metrics", "Bearer reader"))
	assert.Equal(t, 2, s.tokenReviews, "an identity older than a minute is asked again")
	assert.Equal(t, 1, s.accessReviews, "a permission is reused for five minutes")

	// A refusal is asked again after 30 s: a scraper granted the role a moment ago gets in.
	require.Equal(t, http.StatusForbidden, scrape(h, http.MethodGet, "/metrics", "Bearer other"))
	s.allowed["other get /metrics"] = true
	require.Equal(t, http.StatusForbidden, scrape(h, http.MethodGet, "/metrics", "Bearer other"), "the refusal is reused")
	c.t = c.t.Add(deniedTTL + time.Second)
	assert.Equal(t, http.StatusOK, scrape(h, http.MethodGet, "/metrics", "Bearer other"))

	// A token unknown now and created a moment later is let in after 10 s.
	require.Equal(t, http.StatusUnauthorized, scrape(h, http.MethodGet, "/metrics", "Bearer late"))
	s.tokens["late"] = authenticationv1.UserInfo{Username: "reader"}
	require.Equal(t, http.StatusUnauthorized, scrape(h, http.MethodGet, "/metrics", "Bearer late"), "the rejection is reused")
	c.t = c.t.Add(unauthenticatedTTL + time.Second)
	assert.Equal(t, http.StatusOK, scrape(h, http.MethodGet, "/metrics", "Bearer late"))
}

func TestGuardDoesNotMistakeOneCallerForAnother(t *testing.T) {
	// Two tokens of the same name but other groups: only the group is granted the role.
	s := &apiServer{tokens: map[string]authenticationv1.UserInfo{
		"in-group":  {Username: "alice", Groups: []string{"metrics-readers"}},
		"out-group": {Username: "alice"},
	}}
	s.allowed = map[string]bool{}
	g := NewGuard(s.tokenReviewsClient(), accessReviewFunc(func(r *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
		r.Status.Allowed = len(r.Spec.Groups) == 1 && r.Spec.Groups[0] == "metrics-readers"
		return r, nil
	}), time.Now)
	h, err := g.Filter(logr.Discard(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, scrape(h, http.MethodGet, "/metrics", "Bearer in-group"))
	assert.Equal(t, http.StatusForbidden, scrape(h, http.MethodGet, "/metrics", "Bearer out-group"))
}

func TestGuardDoesNotKeepFailures(t *testing.T) {
	s := &apiServer{tokens: map[string]authenticationv1.UserInfo{"reader": {Username: "reader"}},
		allowed: map[string]bool{"reader get /metrics": true}, err: errors.New("connection refused")}
	h, _ := newGuard(t, s)
	assert.Equal(t, http.StatusInternalServerError, scrape(h, http.MethodGet, "/metrics", "Bearer reader"))
	s.err = nil
	assert.Equal(t, http.StatusOK, scrape(h, http.MethodGet, "/metrics", "Bearer reader"), "the API server is asked again once it answers")
}

func TestGuardMemoryIsBounded(t *testing.T) {
	s := &apiServer{tokens: map[string]authenticationv1.UserInfo{}, allowed: map[string]bool{}}
	c := &clock{t: time.Now()}
	g := NewGuard(s.tokenReviewsClient(), s.accessReviewsClient(), c.now)
	h, err := g.Filter(logr.Discard(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	require.NoError(t, err)
	for i := range 3 * cacheEntries {
		token := fmt.Sprintf("invented-%d", i)
		s.tokens[token] = authenticationv1.UserInfo{Username: token}
		require.Equal(t, http.StatusForbidden, scrape(h, http.MethodGet, "/metrics", "Bearer "+token))
	}
	assert.Equal(t, cacheEntries, g.identity.Len())
	assert.Equal(t, cacheEntries, g.verdicts.Len())
}
