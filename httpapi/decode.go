package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Body limits: a request body over its limit is refused with 413, never truncated.
const (
	// maxJSONBody bounds JSON request bodies other than messages.
	maxJSONBody = 1 << 20
	// maxMessageBody bounds a posted message with its attachments (base64 included).
	maxMessageBody = 20 << 20
	// maxFileBody bounds a file uploaded with PUT …/fs/{path}.
	maxFileBody = 64 << 20
	// maxListLimit bounds the limit of a list.
	maxListLimit = 500
	// bodyTimeout bounds the time a request body takes to arrive.
	bodyTimeout = time.Minute
)

var errTooLarge = &apiError{status: http.StatusRequestEntityTooLarge, code: codePayloadTooLarge}

// readBody reads the whole body, refusing one over limit with 413, and one that does not fit in
// the server's budget of body bytes in flight with 503. A body of declared length is read into
// one buffer of its size.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	c := chargeOf(r)
	if r.ContentLength > 0 && !c.take(r.ContentLength) {
		return nil, busy(r.ContentLength)
	}
	// A body that trickles in is cut off (slow-loris): the whole body must arrive within bodyTimeout.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout))
	body := http.MaxBytesReader(w, r.Body, limit)
	var b []byte
	var err error
	if r.ContentLength > 0 {
		b = make([]byte, r.ContentLength)
		_, err = io.ReadFull(body, b) // net/http ends the body at its declared length
	} else {
		cr := &chargedReader{r: body, c: c}
		b, err = io.ReadAll(cr)
		if cr.err != nil {
			return nil, cr.err
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, tooLarge(limit)
	}
	if err != nil {
		return nil, badRequest("reading the request body: " + err.Error())
	}
	return b, nil
}

func tooLarge(limit int64) *apiError {
	e := *errTooLarge
	e.message = fmt.Sprintf("the request body is larger than %d bytes", limit)
	return &e
}

// decodeJSON decodes a JSON body of at most limit bytes into dst, refusing unknown fields, wrong
// types, trailing data and an empty body with 400.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any, optional bool) error {
	b, err := readBody(w, r, limit)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		if optional {
			return nil
		}
		return badRequest("the request body is empty; a JSON object is expected")
	}
	return decodeStrict(b, dst)
}

// inPlaceBody is the size from which decodeStrict decodes a body in place: below it the decoder's
// copy costs less than the checks that let a body skip it (~2 µs for a short message).
const inPlaceBody = 64 << 10

// decodeStrict decodes one JSON value into dst, refusing unknown fields, wrong types and trailing
// data. A large body that is valid JSON, names only dst's fields and decodes is decoded in place:
// a json.Decoder would first copy it into buffers of its own, grown by doubling (64 MiB allocated
// for a message of 20 MiB), and its long strings are left in b (unmarshalInPlace): b must not
// change afterwards. Any other is decoded by the decoder, which says why it is refused exactly as
// it always did.
func decodeStrict(b []byte, dst any) error {
	if len(b) >= inPlaceBody && json.Valid(b) && knownFields(b, reflect.TypeOf(dst)) && unmarshalInPlace(b, dst) {
		return nil
	}
	return decodeStream(b, dst)
}

// decodeStream is decodeStrict through a json.Decoder, which refuses unknown fields.
func decodeStream(b []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			field := te.Field
			if field == "" {
				field = "(body)"
			}
			return badRequest(fmt.Sprintf("field %s: expected %s, got JSON %s", field, te.Type, te.Value))
		case errors.As(err, &se):
			return badRequest(fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se))
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return badRequest(strings.TrimPrefix(err.Error(), "json: "))
		}
		return badRequest("malformed JSON: " + err.Error())
	}
	if dec.More() {
		return badRequest("malformed JSON: data after the JSON value")
	}
	return nil
}

// query reads typed query parameters, collecting the first error.
type query struct {
	r   *http.Request
	err error
}

func (q *query) str(name string) string { return q.r.URL.Query().Get(name) }

func (q *query) int(name string, def, lo, hi int) int {
	v := q.r.URL.Query().Get(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		if q.err == nil {
			q.err = badRequest(fmt.Sprintf("query %s: %q is not an integer from %d to %d", name, v, lo, hi))
		}
		return def
	}
	return n
}

func (q *query) int64(name string) int64 {
	v := q.r.URL.Query().Get(name)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		if q.err == nil {
			q.err = badRequest(fmt.Sprintf("query %s: %q is not a non-negative integer", name, v))
		}
		return 0
	}
	return n
}

func (q *query) bool(name string) bool {
	v := q.r.URL.Query().Get(name)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil && q.err == nil {
		q.err = badRequest(fmt.Sprintf("query %s: %q is not true or false", name, v))
	}
	return b
}

func (q *query) oneOf(name, def string, allowed ...string) string {
	v := q.r.URL.Query().Get(name)
	if v == "" {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	if q.err == nil {
		q.err = badRequest(fmt.Sprintf("query %s: %q is not one of %s", name, v, strings.Join(allowed, ", ")))
	}
	return def
}

// page reads limit (default def, at most maxListLimit) and offset.
func (q *query) page(def int) (limit, offset int) {
	return q.int("limit", def, 1, maxListLimit), q.int("offset", 0, 0, 1<<31-1)
}

// list is the shape of every list answer.
type list[T any] struct {
	Items   []T  `json:"items"`
	Total   int  `json:"total"`
	HasMore bool `json:"has_more"`
}

// pageOf pages a whole slice.
func pageOf[T any](all []T, limit, offset int) list[T] {
	out := list[T]{Items: []T{}, Total: len(all)}
	if offset < len(all) {
		end := min(len(all), offset+limit)
		out.Items = all[offset:end]
		out.HasMore = end < len(all)
	}
	return out
}
