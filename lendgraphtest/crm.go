package lendgraphtest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

func (s *Server) routeCRM(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/crm/lender-channels", s.authed(s.handleLenderChannels))
	mux.HandleFunc("GET /v1/crm/tasks/workspace", s.authed(s.handleWorkspaceTasks))
	mux.HandleFunc("GET /v1/crm/tasks", s.authed(s.handleTasks))
	mux.HandleFunc("PATCH /v1/crm/meetings", s.authed(s.handleMeeting))
	mux.HandleFunc("POST /v1/crm/calls/transcript", s.authed(s.handleTranscribe))
	mux.HandleFunc("PATCH /v1/crm/activity", s.authed(s.handleEditNote))
	mux.HandleFunc("POST /v1/crm/record-shares", s.authed(s.handleShare))
	mux.HandleFunc("POST /v1/crm/records/delete", s.authed(s.handleDeleteRecords))
	mux.HandleFunc("GET /v1/crm/org-members", s.authed(s.handleOrgMembers))
	mux.HandleFunc("POST /v1/integrations/crm/push", s.authed(s.handlePush))
	mux.HandleFunc("GET /v1/integrations/crm/status", s.authed(s.handlePushStatus))
}

// crmState is the area's in-memory store (see areaState): one CRM per
// organization. Another organization's key sees none of it.
type crmState struct {
	crmOrgs map[string]*crmOrg
}

func (st *crmState) init() { st.crmOrgs = map[string]*crmOrg{} }

type crmOrg struct {
	seeded   map[string]CRMFixtures // by user id
	records  map[string]*crmRecord  // by entity id
	tasks    []Record
	meetings map[string]Record
	calls    map[string]Record
	notes    map[string]Record
	pushed   map[string]string // entity|id → external CRM record id
}

type crmRecord struct {
	id, owner string
	shared    map[string]bool
	orig      int // originator index
}

func (r *crmRecord) visibleTo(userID string) bool { return r.owner == userID || r.shared[userID] }

// CRMFixtures are the CRM records seeded for a caller on its first CRM
// request (or by Fixtures): three loan-officer records it owns, tasks on
// them, one meeting, one call skipped as voicemail, and one note.
type CRMFixtures struct {
	RecordIDs []string
	MeetingID string
	CallID    string
	NoteID    string
}

// CRMFixtures seeds (once) and returns the caller's CRM records.
func (s *Server) CRMFixtures(c Caller) CRMFixtures {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crmLocked(c).seeded[c.UserID]
}

// crmLocked returns the caller's organization CRM, seeding the caller's records.
func (s *Server) crmLocked(c Caller) *crmOrg {
	o, ok := s.area.crmOrgs[c.OrgID]
	if !ok {
		o = &crmOrg{seeded: map[string]CRMFixtures{}, records: map[string]*crmRecord{}, meetings: map[string]Record{},
			calls: map[string]Record{}, notes: map[string]Record{}, pushed: map[string]string{}}
		s.area.crmOrgs[c.OrgID] = o
	}
	if _, ok := o.seeded[c.UserID]; !ok {
		s.seedCRMLocked(o, c)
	}
	return o
}

func (s *Server) seedCRMLocked(o *crmOrg, c Caller) {
	n := len(o.seeded)
	now := s.nowLocked().UnixMilli()
	day := int64(86_400_000)
	var fx CRMFixtures
	nOrig := max(s.data.Len("originators"), 1)
	for k := range 3 {
		idx := (n*3 + k) % nOrig
		id := s.data.ID("originators", idx)
		if _, taken := o.records[id]; taken {
			id = fmt.Sprintf("%s-%d", id, n)
		}
		o.records[id] = &crmRecord{id: id, owner: c.UserID, shared: map[string]bool{}, orig: idx}
		fx.RecordIDs = append(fx.RecordIDs, id)
		o.tasks = append(o.tasks, Record{"id": s.newID("task"), "listId": "list_default", "entityId": id,
			"title": "Call back", "body": "Follow up on rates", "status": "open", "allDay": false,
			"assigneeUserId": c.UserID, "createdByUserId": c.UserID, "calendarEventId": "", "calendarProvider": "google",
			"dueAt": now + int64(k+1)*day, "createdAt": now - day})
	}
	o.tasks = append(o.tasks, Record{"id": s.newID("task"), "listId": "list_default", "entityId": fx.RecordIDs[0],
		"title": "Send intro", "body": "", "status": "completed", "allDay": true, "assigneeUserId": c.UserID,
		"createdByUserId": c.UserID, "calendarProvider": "google", "dueAt": now - day, "createdAt": now - 3*day, "completedAt": now - day})
	fx.MeetingID = s.newID("mtg")
	o.meetings[fx.MeetingID] = Record{"id": fx.MeetingID, "entityId": fx.RecordIDs[0], "status": "scheduled", "title": "Intro meeting"}
	fx.CallID = s.newID("call")
	o.calls[fx.CallID] = Record{"id": fx.CallID, "organizationId": c.OrgID, "entityId": fx.RecordIDs[0], "userId": c.UserID,
		"fromNumber": "+15555550100", "toNumber": "+15555550199", "status": "completed", "providerCallSid": "CA" + randHex(8),
		"recordingSid": "RE" + randHex(8), "transcriptSid": "", "recordingEnabled": true,
		"startedAt": now - 2*day, "endedAt": now - 2*day + 95_000, "createdAt": now - 2*day, "durationSeconds": 95,
		"answeredBy": "machine_end_beep", "endedBy": "caller", "transcriptStatus": "skipped_voicemail", "transcript": []any{}}
	fx.NoteID = s.newID("note")
	o.notes[fx.NoteID] = Record{"id": fx.NoteID, "entityId": fx.RecordIDs[0], "bodyHtml": "<p>Met at the expo</p>"}
	o.seeded[c.UserID] = fx
}

func (o *crmOrg) visible(entityID, userID string) bool {
	r, ok := o.records[entityID]
	return ok && r.visibleTo(userID)
}

// find returns the item of a store (meetings, calls, notes) whose record the
// caller can see, or answers 404.
func (o *crmOrg) find(w http.ResponseWriter, store map[string]Record, id, what, userID string) (Record, bool) {
	it, ok := store[id]
	if !ok || !o.visible(it["entityId"].(string), userID) {
		writeError(w, http.StatusNotFound, what+" not found", nil)
		return nil, false
	}
	return it, true
}

func (s *Server) handleLenderChannels(w http.ResponseWriter, r *http.Request, _ Caller) {
	var body struct {
		LoNmlsIDs []string `json:"loNmlsIds"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if body.LoNmlsIDs == nil {
		writeError(w, http.StatusBadRequest, "loNmlsIds is required", nil)
		return
	}
	byLo := map[string]any{}
	for _, id := range body.LoNmlsIDs {
		i, ok := s.data.Index("originators", id)
		if !ok {
			continue
		}
		o := s.data.Summary("originators", i)
		ci, _ := s.data.Index("companies", o["companyNmlsId"].(string))
		comp := s.data.Summary("companies", ci)
		byLo[id] = map[string]any{"channel": comp["channel"], "companyName": comp["name"], "companyNmlsId": comp["nmlsId"]}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"byLo": byLo}})
}

// taskStatusParam reads the status query parameter, answering 400 on an
// unknown value.
func taskStatusParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	st := r.URL.Query().Get("status")
	if st != "" && st != "open" && st != "completed" && st != "cancelled" {
		writeError(w, http.StatusBadRequest, "status must be open, completed or cancelled", nil)
		return "", false
	}
	return st, true
}

// visibleTasks returns the tasks on records the user sees, with the status
// (when set), that keep accepts.
func (o *crmOrg) visibleTasks(userID, status string, keep func(t Record) bool) []Record {
	out := []Record{}
	for _, t := range o.tasks {
		if o.visible(t["entityId"].(string), userID) && (status == "" || t["status"] == status) && keep(t) {
			out = append(out, t)
		}
	}
	return out
}

func (s *Server) handleWorkspaceTasks(w http.ResponseWriter, r *http.Request, c Caller) {
	status, ok := taskStatusParam(w, r)
	if !ok {
		return
	}
	assignee := r.URL.Query().Get("assignee")
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.crmLocked(c)
	tasks := o.visibleTasks(c.UserID, status, func(t Record) bool { return assignee == "" || t["assigneeUserId"] == assignee })
	out := make([]Record, 0, len(tasks))
	for _, t := range tasks {
		rec := o.records[t["entityId"].(string)]
		lo := s.data.Summary("originators", rec.orig)
		e := maps.Clone(t)
		e["canDelete"] = t["createdByUserId"] == c.UserID || rec.owner == c.UserID
		e["entityType"] = "lo"
		e["recordName"] = lo["fullName"]
		e["recordSubtitle"] = lo["companyName"]
		e["display"] = map[string]any{"name": lo["fullName"], "companyName": lo["companyName"], "companyNmlsId": lo["companyNmlsId"],
			"city": lo["city"], "state": lo["state"], "location": fmt.Sprintf("%s, %s", lo["city"], lo["state"]),
			"units": lo["loanCount"], "volume": lo["volume"], "subtitle": lo["title"], "contactCheckedAt": t["createdAt"]}
		e["overrides"] = map[string]any{"office": map[string]any{"city": lo["city"], "key": "office_1", "lat": 30.27, "lon": -97.74,
			"name": "Main office", "state": lo["state"]}, "phone": "+15555550123"}
		out = append(out, e)
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
}

func (s *Server) handleTasks(w http.ResponseWriter, r *http.Request, c Caller) {
	status, ok := taskStatusParam(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	owner, entity, assignee := q.Get("owner"), q.Get("entityId"), q.Get("assigneeUserId")
	if owner != "" && owner != "me" {
		writeError(w, http.StatusBadRequest, "owner must be me", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.crmLocked(c).visibleTasks(c.UserID, status, func(t Record) bool {
		return (entity == "" || t["entityId"] == entity) && (assignee == "" || t["assigneeUserId"] == assignee) &&
			(owner == "" || t["assigneeUserId"] == c.UserID)
	})
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
}

func (s *Server) handleMeeting(w http.ResponseWriter, r *http.Request, c Caller) {
	var body map[string]any
	if !readJSON(w, r, &body) {
		return
	}
	id, _ := body["id"].(string)
	action, _ := body["action"].(string)
	if id == "" || action == "" {
		writeError(w, http.StatusBadRequest, "id and action are required", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.crmLocked(c)
	m, ok := o.find(w, o.meetings, id, "meeting", c.UserID)
	if !ok {
		return
	}
	// No calendar is connected in the fake: changes are kept locally and
	// the answer asks to connect Google.
	switch action {
	case "update":
		for k, v := range body {
			if k != "id" && k != "action" {
				m[k] = v
			}
		}
	case "cancel":
		m["status"] = "cancelled"
	case "complete":
		m["status"] = "completed"
	case "re-sync":
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"needsConnect": "google", "updated": false}})
		return
	default:
		writeError(w, http.StatusBadRequest, "unknown action "+strconv.Quote(action), nil)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"needsConnect": "google", "updated": true}})
}

func (s *Server) handleTranscribe(w http.ResponseWriter, r *http.Request, c Caller) {
	var body struct {
		ID string `json:"id"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.crmLocked(c)
	call, ok := o.find(w, o.calls, body.ID, "call", c.UserID)
	if !ok {
		return
	}
	call["transcriptSid"] = "TR" + randHex(8)
	call["transcriptStatus"] = "completed"
	call["transcript"] = []any{
		map[string]any{"speaker": "user", "text": "Hi, this is Dana from LendGraph, returning your call."},
		map[string]any{"speaker": "contact", "text": "Thanks, call me back Thursday about the refinance."},
	}
	call["aiLabel"] = "callback_requested"
	call["aiSummary"] = "The loan officer asked for a call back on Thursday about a refinance."
	call["aiSentiment"] = "positive"
	call["aiActions"] = []any{map[string]any{"type": "task", "title": "Call back about the refinance", "dueInDays": 3},
		map[string]any{"type": "meeting", "title": "Refinance review", "startInDays": 3, "durationMinutes": 30}}
	call["aiAnalyzedAt"] = s.nowLocked().UnixMilli()
	writeJSON(w, http.StatusOK, map[string]any{"data": call})
}

func (s *Server) handleEditNote(w http.ResponseWriter, r *http.Request, c Caller) {
	var body struct {
		ID   string  `json:"id"`
		Body *string `json:"body"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if body.ID == "" || body.Body == nil {
		writeError(w, http.StatusBadRequest, "id and body are required", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.crmLocked(c)
	n, ok := o.find(w, o.notes, body.ID, "note", c.UserID)
	if !ok {
		return
	}
	prev := n["bodyHtml"]
	n["bodyHtml"] = *body.Body
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"entityId": n["entityId"], "previousBodyHtml": prev, "updated": true}})
}

func (s *Server) handleShare(w http.ResponseWriter, r *http.Request, c Caller) {
	var body struct {
		EntityID string `json:"entityId"`
		UserID   string `json:"userId"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.crmLocked(c)
	rec, ok := o.records[body.EntityID]
	if !ok || !rec.visibleTo(c.UserID) {
		writeError(w, http.StatusNotFound, "record not found", nil)
		return
	}
	if !slices.ContainsFunc(s.orgMembersLocked(c.OrgID), func(m Caller) bool { return m.UserID == body.UserID }) {
		writeError(w, http.StatusNotFound, "user is not a member of the organization", nil)
		return
	}
	rec.shared[body.UserID] = true
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"granted": true}})
}

// handleDeleteRecords removes the caller's own records; records it cannot
// see, only sees through a share, or that do not exist are skipped.
func (s *Server) handleDeleteRecords(w http.ResponseWriter, r *http.Request, c Caller) {
	var body struct {
		EntityIDs []string `json:"entityIds"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.crmLocked(c)
	removed, skipped := []string{}, []string{}
	for _, id := range body.EntityIDs {
		rec, ok := o.records[id]
		if !ok || rec.owner != c.UserID {
			skipped = append(skipped, id)
			continue
		}
		delete(o.records, id)
		o.tasks = slices.DeleteFunc(o.tasks, func(t Record) bool { return t["entityId"] == id })
		removed = append(removed, id)
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"removed": removed, "skipped": skipped}})
}

// orgMembersLocked lists the callers of an organization by user id.
func (s *Server) orgMembersLocked(orgID string) []Caller {
	var out []Caller
	for _, c := range s.callers {
		if c.OrgID == orgID && !slices.ContainsFunc(out, func(o Caller) bool { return o.UserID == c.UserID }) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Caller) int { return strings.Compare(a.UserID, b.UserID) })
	return out
}

func (s *Server) handleOrgMembers(w http.ResponseWriter, r *http.Request, c Caller) {
	q := r.URL.Query()
	limit := 50
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "limit must be an integer, at least 0", nil)
			return
		}
		limit = n
	}
	search := strings.ToLower(q.Get("search"))
	s.mu.Lock()
	members := s.orgMembersLocked(c.OrgID)
	s.mu.Unlock()
	out := []map[string]any{}
	for _, m := range members {
		name := "User " + strings.TrimPrefix(m.UserID, "user_")
		email := m.UserID + "@example.com"
		if search != "" && !strings.Contains(strings.ToLower(name), search) && !strings.Contains(email, search) {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, map[string]any{"userId": m.UserID, "name": name, "email": email, "image": ""})
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"members": out}})
}

// pushEntities maps the push entities the fake knows to resources.
var pushEntities = map[string]string{"agent": "agents", "originator": "originators", "company": "companies"}

// PushPrice is the credits charged per record the push writes.
const PushPrice = 1.0

func pushInvalid(w http.ResponseWriter, msg string, details map[string]any) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"code": "invalid_request", "error": msg, "details": details})
}

// handlePush writes records to the organization's (fake) external CRM:
// existing ones are matched and updated, not duplicated; each written
// record is charged; a dry run writes and charges nothing.
func (s *Server) handlePush(w http.ResponseWriter, r *http.Request, c Caller) {
	var body struct {
		Entity string   `json:"entity"`
		IDs    []string `json:"ids"`
		Object string   `json:"object"`
		DryRun bool     `json:"dryRun"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	res, ok := pushEntities[body.Entity]
	switch {
	case !ok:
		pushInvalid(w, "unsupported entity", map[string]any{"field": "entity", "value": body.Entity})
		return
	case body.Object != "contact" && body.Object != "company":
		pushInvalid(w, "unsupported object", map[string]any{"field": "object", "value": body.Object})
		return
	case len(body.IDs) == 0 || len(body.IDs) > 100:
		pushInvalid(w, "ids must hold 1 to 100 ids", map[string]any{"field": "ids", "max": 100, "count": len(body.IDs)})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.crmLocked(c)
	results := []map[string]any{}
	summary := map[string]int{"requested": len(body.IDs), "created": 0, "updated": 0, "skipped": 0, "failed": 0}
	writes := map[string]string{}
	for _, id := range body.IDs {
		if _, found := s.data.Index(res, id); !found {
			results = append(results, map[string]any{"id": id, "status": "skipped", "reason": "not_found", "message": body.Entity + " not found"})
			summary["skipped"]++
			continue
		}
		key := body.Entity + "|" + body.Object + "|" + id
		if crmID, exists := o.pushed[key]; exists {
			results = append(results, map[string]any{"id": id, "status": "updated", "crmRecordId": crmID, "preserved": []any{"lifecyclestage", "hubspot_owner_id"}})
			summary["updated"]++
			writes[key] = crmID
			continue
		}
		crmID, dup := writes[key]
		if !dup {
			crmID = strconv.FormatInt(9_000_000+s.nextID.Add(1), 10)
		}
		status := "created"
		if dup {
			status = "updated"
		}
		results = append(results, map[string]any{"id": id, "status": status, "crmRecordId": crmID})
		summary[status]++
		writes[key] = crmID
	}
	cost := PushPrice * float64(summary["created"]+summary["updated"])
	balance := s.orgLocked(c.OrgID).credits
	if !body.DryRun && cost > balance {
		writeError(w, http.StatusPaymentRequired, "insufficient credits", map[string]any{"balance": balance, "cost": cost})
		return
	}
	charged, note := 0.0, "dry run: nothing was written or charged"
	if !body.DryRun {
		for k, v := range writes {
			o.pushed[k] = v
		}
		if cost > 0 {
			s.debitLocked(c, "crm-push", cost)
		}
		charged, note = cost, fmt.Sprintf("charged %g credits for %d records written", cost, summary["created"]+summary["updated"])
	}
	writeJSON(w, http.StatusOK, map[string]any{"billing": map[string]any{"charged": charged, "note": note}, "dryRun": body.DryRun,
		"entity": body.Entity, "object": body.Object, "portalId": "portal_" + c.OrgID, "portalRecorded": !body.DryRun,
		"results": results, "summary": summary})
}

func (s *Server) handlePushStatus(w http.ResponseWriter, r *http.Request, c Caller) {
	writeJSON(w, http.StatusOK, map[string]any{"connected": true, "objects": []string{"contact", "company"},
		"accountMatches": true, "portalId": "portal_" + c.OrgID})
}
