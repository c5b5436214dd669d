// Who may read the scheduler's state: GET /inspect and POST /fit (the web page's data). With
// scheduler.read-access=token each request must carry "Authorization: Bearer <token>" (or, when it
// has no Authorization, the same in kPageAuthorizationHeader), a
// Kubernetes token that a TokenReview authenticates and a SubjectAccessReview allows for the
// request's action on the resource `scheduler` of the API group `tessera.io` (kube_read_access.h
// asks the API server); with `open` nobody is asked anything (the HTTP server gets no
// ReadAuthorizer). The page's own files under /ui/ hold no data and need no token.
//
//   AccessVerdict v = authorizer.Check(req.get_header_value("Authorization"), kReadInspect);
//   if (v.status != 200) Refuse(v.status, v.error);
//
// Why and how to grant it: docs/ui.md, "Who can read it".
#pragma once

#include <optional>
#include <string>

namespace tessera::scheduler {

// The header that carries the token when Authorization is empty: the API server's pods/proxy,
// the way `kubectl tessera ui` reaches the page, removes Authorization after authenticating the
// caller, so the page sends its token in both.
inline constexpr char kPageAuthorizationHeader[] = "X-Tessera-Authorization";

enum class ReadAccess { kToken, kOpen };
// "token" or "open"; nullopt for anything else.
std::optional<ReadAccess> ParseReadAccess(const std::string& text);

// The SubjectAccessReview attributes of a request: verb on tessera.io scheduler/<subresource>.
struct ReadAction {
  const char* verb;
  const char* subresource;
};
inline constexpr char kAccessGroup[] = "tessera.io";
inline constexpr char kAccessResource[] = "scheduler";
inline constexpr ReadAction kReadInspect{"get", "inspect"};  // GET /inspect
inline constexpr ReadAction kRunFit{"create", "fit"};        // POST /fit

struct AccessVerdict {
  // 200 allowed; 401 no token, or one the API server does not authenticate; 403 authenticated
  // but not allowed; 429 too many new tokens to review now; 503 the API server could not be
  // asked (nothing is let through then).
  int status = 200;
  std::string user;   // the authenticated user's name, when known
  std::string error;  // what was wrong and what is needed, when not 200
};

// The bearer token of an Authorization header value ("Bearer abc" -> "abc", the scheme in any
// case); nullopt when the header is empty, of another scheme, or has no token.
std::optional<std::string> BearerToken(const std::string& authorization);

// Decides a request's access. Implementations are thread-safe.
class ReadAuthorizer {
 public:
  virtual ~ReadAuthorizer() = default;
  // `authorization` is the request's Authorization header, empty when it has none.
  virtual AccessVerdict Check(const std::string& authorization, const ReadAction& action) = 0;
};

}  // namespace tessera::scheduler
