package flink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// ErrorKind classifies a failed call so that reconcilers can branch on what happened
// without parsing messages.
type ErrorKind string

const (
	// KindNotFound: the job, jar or resource does not exist (404).
	KindNotFound ErrorKind = "NotFound"
	// KindTriggerNotFound: the status of an async operation was asked with a trigger id the
	// JobManager does not know (404). It happens after a JobManager restart (the operation
	// cache lives in its memory) or after rest.async.store-duration: the operation's outcome
	// is unknown, not failed.
	KindTriggerNotFound ErrorKind = "TriggerNotFound"
	// KindConflict: the job is already in a terminal state (409).
	KindConflict ErrorKind = "Conflict"
	// KindDuplicateJob: a job was submitted under an id the cluster already has (a submission
	// repeated after an operator crash).
	KindDuplicateJob ErrorKind = "DuplicateJob"
	// KindBadRequest: Flink rejected the request (400); Message says why.
	KindBadRequest ErrorKind = "BadRequest"
	// KindUnavailable: the JobManager cannot be reached (connection refused, DNS, 503).
	KindUnavailable ErrorKind = "Unavailable"
	// KindTimeout: the call timed out (client deadline, 408, 504).
	KindTimeout ErrorKind = "Timeout"
	// KindServer: Flink failed to serve the request (other 5xx).
	KindServer ErrorKind = "ServerError"
	// KindMalformed: the response could not be decoded.
	KindMalformed ErrorKind = "MalformedResponse"
	// KindUnsupported: the cluster's Flink version does not offer the operation.
	KindUnsupported ErrorKind = "Unsupported"
	// KindRedirect: the JobManager answered 3xx, which Flink never does; the redirect is not
	// followed (it could point the operator's request at another tenant's JobManager).
	KindRedirect ErrorKind = "UnexpectedRedirect"
)

// Error is the error of every client call.
type Error struct {
	// Kind classifies the failure.
	Kind ErrorKind
	// Op names the call, e.g. "trigger savepoint".
	Op string
	// StatusCode is the HTTP status, 0 when no response was received.
	StatusCode int
	// Message is Flink's own message (first line of its error), or a description.
	Message string
	// Err is the underlying transport or decoding error, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("flink: ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	b.WriteString(string(e.Kind))
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	// Both may hold a JobManager's text (a message, a decoding error quoting the reply).
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(TruncateMessage(e.Message))
	}
	if e.Err != nil && e.Message == "" {
		b.WriteString(": ")
		b.WriteString(TruncateMessage(e.Err.Error()))
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of a client error, or "" for other errors.
func KindOf(err error) ErrorKind {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return ""
}

// IsNotFound reports whether the job, jar or resource does not exist.
func IsNotFound(err error) bool { return KindOf(err) == KindNotFound }

// IsTriggerNotFound reports whether the JobManager does not know an async operation's trigger id.
func IsTriggerNotFound(err error) bool { return KindOf(err) == KindTriggerNotFound }

// IsConflict reports whether the job was already terminal.
func IsConflict(err error) bool { return KindOf(err) == KindConflict }

// IsDuplicateJob reports whether a submission found its job id taken.
func IsDuplicateJob(err error) bool { return KindOf(err) == KindDuplicateJob }

// IsBadRequest reports whether Flink rejected the request.
func IsBadRequest(err error) bool { return KindOf(err) == KindBadRequest }

// IsUnavailable reports whether the JobManager could not be reached.
func IsUnavailable(err error) bool { return KindOf(err) == KindUnavailable }

// IsTimeout reports whether the call timed out.
func IsTimeout(err error) bool { return KindOf(err) == KindTimeout }

// IsUnsupported reports whether the cluster's Flink version lacks the operation.
func IsUnsupported(err error) bool { return KindOf(err) == KindUnsupported }

// transportError classifies an error from http.Client.Do.
func transportError(op string, err error) *Error {
	kind := KindUnavailable
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		kind = KindTimeout
	case errors.As(err, &netErr) && netErr.Timeout():
		kind = KindTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		kind = KindUnavailable
	}
	return &Error{Kind: kind, Op: op, Err: err}
}

// statusError classifies a non-2xx response; body is Flink's {"errors":[...]}.
func statusError(op string, status int, body []byte, trigger bool) *Error {
	e := &Error{Op: op, StatusCode: status, Message: errorMessage(body)}
	switch {
	case bytes.Contains(body, []byte("DuplicateJobSubmissionException")) || bytes.Contains(body, []byte("DuplicateApplicationSubmissionException")):
		// Flink's first line says only "Could not execute application."; the cause named in
		// the stack trace it sends along tells a repeated submission (a job on 1.x, an
		// application on 2.3+).
		e.Kind = KindDuplicateJob
	case status == http.StatusInternalServerError && bytes.Contains(body, []byte("FlinkJobNotFoundException")):
		// Some of Flink's job handlers (the job status one on 1.20) answer an unknown job id
		// with a 500 whose trace names the cause, where the others answer 404.
		e.Kind = KindNotFound
	case status == http.StatusNotFound && trigger:
		e.Kind = KindTriggerNotFound
	case status == http.StatusNotFound:
		e.Kind = KindNotFound
	case status == http.StatusConflict:
		e.Kind = KindConflict
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		e.Kind = KindTimeout
	case status == http.StatusServiceUnavailable || status == http.StatusBadGateway:
		e.Kind = KindUnavailable
	case status >= 400 && status < 500:
		e.Kind = KindBadRequest
	default:
		e.Kind = KindServer
	}
	return e
}
