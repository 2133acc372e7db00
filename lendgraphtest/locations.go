package lendgraphtest

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

func (s *Server) routeLocations(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/locations/suggest", s.authed(s.handleSuggest))
	mux.HandleFunc("GET /v1/locations/retrieve", s.authed(s.handleRetrieve))
}

// locationsState holds the location dictionary, built once from the
// dataset's cities and counties (see areaState).
type locationsState struct {
	dictOnce sync.Once
	dict     []place
}

func (st *locationsState) init() {}

// place is one dictionary entry: a city or a county.
type place struct {
	ID, Name, State, Kind string   // Kind: city or county
	Aliases               []string // other spellings (a mapping provider's)
	Count                 int64    // properties in the place
	Cities                []string // a county's cities
}

// countyOf names the county of each dataset city (city names are unique
// across the dataset's states).
var countyOf = map[string]string{
	"Los Angeles": "Los Angeles", "San Diego": "San Diego", "San Jose": "Santa Clara", "Sacramento": "Sacramento", "Fresno": "Fresno",
	"Houston": "Harris", "Dallas": "Dallas", "Austin": "Travis", "San Antonio": "Bexar", "Fort Worth": "Tarrant",
	"Miami": "Miami-Dade", "Orlando": "Orange", "Tampa": "Hillsborough", "Jacksonville": "Duval",
	"New York": "New York", "Buffalo": "Erie", "Rochester": "Monroe", "Albany": "Albany",
	"Philadelphia": "Philadelphia", "Pittsburgh": "Allegheny", "Allentown": "Lehigh",
	"Chicago": "Cook", "Naperville": "DuPage", "Springfield": "Sangamon",
	"Columbus": "Franklin", "Cleveland": "Cuyahoga", "Cincinnati": "Hamilton",
	"Atlanta": "Fulton", "Savannah": "Chatham", "Augusta": "Richmond",
	"Charlotte": "Mecklenburg", "Raleigh": "Wake", "Durham": "Durham",
	"Detroit": "Wayne", "Grand Rapids": "Kent", "Ann Arbor": "Washtenaw",
	"Newark": "Essex", "Jersey City": "Hudson", "Trenton": "Mercer",
	"Virginia Beach": "Princess Anne", "Richmond": "Henrico", "Arlington": "Arlington",
	"Seattle": "King", "Spokane": "Spokane", "Tacoma": "Pierce",
	"Phoenix": "Maricopa", "Tucson": "Pima", "Mesa": "Maricopa", "Scottsdale": "Maricopa",
	"Nashville": "Davidson", "Memphis": "Shelby", "Knoxville": "Knox",
	"Boston": "Suffolk", "Worcester": "Worcester", "Cambridge": "Middlesex",
	"Indianapolis": "Marion", "Fort Wayne": "Allen", "Evansville": "Vanderburgh",
	"Baltimore": "Baltimore", "Annapolis": "Anne Arundel", "Rockville": "Montgomery",
	"Kansas City": "Jackson", "St. Louis": "St. Louis", "Columbia": "Boone",
	"Milwaukee": "Milwaukee", "Madison": "Dane", "Green Bay": "Brown",
	"Denver": "Denver", "Boulder": "Boulder", "Colorado Springs": "El Paso",
	"Minneapolis": "Hennepin", "Saint Paul": "Ramsey", "Duluth": "St. Louis",
	"Charleston": "Charleston", "Greenville": "Greenville", "Myrtle Beach": "Horry",
	"Birmingham": "Jefferson", "Montgomery": "Montgomery", "Huntsville": "Madison",
	"New Orleans": "Orleans", "Baton Rouge": "East Baton Rouge", "Shreveport": "Caddo",
	"Louisville": "Jefferson", "Lexington": "Fayette",
	"Portland": "Multnomah", "Eugene": "Lane", "Salem": "Marion",
	"Oklahoma City": "Oklahoma", "Tulsa": "Tulsa",
	"Hartford": "Hartford", "New Haven": "New Haven", "Stamford": "Fairfield",
	"Salt Lake City": "Salt Lake", "Provo": "Utah", "Ogden": "Weber",
	"Des Moines": "Polk", "Cedar Rapids": "Linn",
	"Las Vegas": "Clark", "Reno": "Washoe", "Henderson": "Clark",
	"Little Rock": "Pulaski", "Fayetteville": "Washington",
	"Jackson": "Hinds", "Gulfport": "Harrison",
	"Wichita": "Sedgwick", "Overland Park": "Johnson",
	"Albuquerque": "Bernalillo", "Santa Fe": "Santa Fe",
	"Omaha": "Douglas", "Lincoln": "Lancaster",
	"Boise": "Ada", "Idaho Falls": "Bonneville",
	"Huntington": "Cabell", "Morgantown": "Monongalia",
	"Honolulu": "Honolulu", "Hilo": "Hawaii",
	"Manchester": "Hillsborough", "Nashua": "Hillsborough",
	"Bangor": "Penobscot", "Lewiston": "Androscoggin",
	"Billings": "Yellowstone", "Missoula": "Missoula",
	"Providence": "Providence", "Warwick": "Kent",
	"Wilmington": "New Castle", "Dover": "Kent",
	"Sioux Falls": "Minnehaha", "Rapid City": "Pennington",
	"Fargo": "Cass", "Bismarck": "Burleigh",
	"Anchorage": "Anchorage", "Fairbanks": "Fairbanks North Star",
	"Washington": "District of Columbia",
	"Burlington": "Chittenden", "Montpelier": "Washington",
	"Cheyenne": "Laramie", "Casper": "Natrona",
}

// cityAliases are spellings a mapping provider uses for dataset cities.
var cityAliases = map[string][]string{
	"Fort Worth": {"Ft Worth", "Ft. Worth"}, "New York": {"New York City", "NYC"},
	"Colorado Springs": {"Colo Springs"}, "Las Vegas": {"Vegas"}, "Saint Paul": {"St Paul"},
}

func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// cityID is the dictionary id of a city or county: city_<state>_<slug>.
func cityID(state, name string) string {
	return "city_" + strings.ToLower(state) + "_" + slug(name)
}

// dictionary builds (once) the places of the dataset with their property counts.
func (s *Server) dictionary() []place {
	st := &s.area.locationsState
	st.dictOnce.Do(func() {
		counts := map[string]int64{}
		for i := range s.data.Len("properties") {
			r := s.data.Summary("properties", i)
			if st, ok := r["state"].(string); ok {
				counts[st+"|"+r["city"].(string)]++
			}
		}
		counties := map[string]*place{}
		for _, state := range states {
			for _, city := range stateCity[state] {
				n := counts[state+"|"+city]
				st.dict = append(st.dict, place{ID: cityID(state, city), Name: city, State: state, Kind: "city", Aliases: cityAliases[city], Count: n})
				cn := countyOf[city] + " County"
				c, ok := counties[state+"|"+cn]
				if !ok {
					c = &place{ID: cityID(state, cn), Name: cn, State: state, Kind: "county"}
					counties[state+"|"+cn] = c
				}
				c.Count += n
				c.Cities = append(c.Cities, city)
			}
		}
		for _, c := range counties {
			st.dict = append(st.dict, *c)
		}
		slices.SortFunc(st.dict, func(a, b place) int {
			return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(b.Count, a.Count), cmp.Compare(a.ID, b.ID))
		})
	})
	return st.dict
}

// lookupCity finds the dictionary cities a filter value names: by id, name
// or alias, ignoring case.
func (s *Server) lookupCity(v string) []place {
	var out []place
	for _, p := range s.dictionary() {
		if p.Kind != "city" {
			continue
		}
		if p.ID == v || strings.EqualFold(p.Name, v) || slices.ContainsFunc(p.Aliases, func(a string) bool { return strings.EqualFold(a, v) }) {
			out = append(out, p)
		}
	}
	return out
}

func (p place) suggestion() map[string]any {
	return map[string]any{
		"id": p.ID, "name": p.Name, "place_formatted": p.Name + ", " + p.State,
		"full_address": p.Name + ", " + p.State + ", United States", "state": p.State,
		"type": p.Kind, "feature_type": map[string]string{"city": "place", "county": "district"}[p.Kind],
		"totalCount": p.Count, "source": "dictionary", "map_id": "dict." + p.ID,
	}
}

// coords derives stable coordinates from a key.
func coords(key string) (lat, lon float64) {
	h := fnv.New64a()
	h.Write([]byte(key))
	v := h.Sum64()
	return round(25+float64(v%23000)/1000, 5), round(-123+float64((v>>20)%52000)/1000, 5)
}

// maxAddressScan bounds the properties scanned for street suggestions.
const maxAddressScan = 5000

func (s *Server) handleSuggest(w http.ResponseWriter, r *http.Request, _ Caller) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" {
		writeError(w, http.StatusBadRequest, "q is required (length at least 1)", nil)
		return
	}
	limit := 5
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 10 {
			writeError(w, http.StatusBadRequest, "limit must be an integer from 1 to 10", nil)
			return
		}
		limit = n
	}
	out := []map[string]any{}
	if q[0] >= '0' && q[0] <= '9' {
		// Street addresses come from the (fake) external mapping provider.
		for i := range min(s.data.Len("properties"), maxAddressScan) {
			p := s.data.Summary("properties", i)
			street := p["street"].(string)
			if street == "" || !strings.HasPrefix(strings.ToLower(street), strings.ToLower(q)) {
				continue
			}
			full := fmt.Sprintf("%s, %s, %s %s", street, p["city"], p["state"], p["zip"])
			out = append(out, map[string]any{"name": street, "place_formatted": fmt.Sprintf("%s, %s %s", p["city"], p["state"], p["zip"]),
				"full_address": full, "state": p["state"], "type": "address", "feature_type": "address", "source": "mapbox",
				"map_id": "addr." + p["id"].(string)})
			if len(out) == limit {
				break
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"suggestions": out})
		return
	}
	lq := strings.ToLower(q)
	for _, p := range s.dictionary() {
		hit := strings.HasPrefix(strings.ToLower(p.Name), lq)
		for _, a := range p.Aliases {
			hit = hit || strings.HasPrefix(strings.ToLower(a), lq)
		}
		if hit {
			out = append(out, p.suggestion())
			if len(out) == limit {
				break
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"suggestions": out})
}

func (s *Server) handleRetrieve(w http.ResponseWriter, r *http.Request, _ Caller) {
	id := r.URL.Query().Get("mapId")
	if id == "" {
		writeError(w, http.StatusBadRequest, "mapId is required", nil)
		return
	}
	if pid, ok := strings.CutPrefix(id, "addr."); ok {
		i, ok := s.data.Index("properties", pid)
		if !ok {
			writeError(w, http.StatusNotFound, "location not found", nil)
			return
		}
		p := s.data.Summary("properties", i)
		lat, lon := coords(id)
		writeJSON(w, http.StatusOK, map[string]any{"map_id": id, "name": p["street"],
			"full_address": fmt.Sprintf("%s, %s, %s %s", p["street"], p["city"], p["state"], p["zip"]),
			"state":        p["state"], "city": p["city"], "postcode": p["zip"], "lat": lat, "lon": lon})
		return
	}
	for _, p := range s.dictionary() {
		if "dict."+p.ID == id {
			lat, lon := coords(id)
			body := p.suggestion()
			body["lat"], body["lon"] = lat, lon
			writeJSON(w, http.StatusOK, body)
			return
		}
	}
	writeError(w, http.StatusNotFound, "location not found", nil)
}
