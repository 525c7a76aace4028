// sinter_server: serves one compiled model over the KServe v2 (Triton) inference protocol, JSON
// over HTTP, with cpp-httplib. Every request runs on a free session of one sinter_pool, so the
// server has no locking of its own. An artifact whose batch dim has buckets the compiler may pad
// (`sinter compile --dim batch=1,2,4,8`) batches concurrent requests (batcher.h): up to
// --max-batch rows (default: the largest bucket; 1: no batching), waiting at most
// --max-queue-delay-us for more requests (default 0: only what queued while every session was
// busy; docs/performance.md measures 500 against 0).
//
//   sinter_server MODEL.so [--name NAME] [--host 127.0.0.1] [--port 8000] [--sessions N]
//                 [--threads-per-session N] [--http-threads N] [--max-body-bytes N]
//                 [--max-batch N] [--max-queue-delay-us N]
//
//   GET  /v2/health/live, /v2/health/ready   200 (empty body) once the model is loaded
//   GET  /v2                                 server metadata
//   GET  /v2/models/NAME, /v2/models/NAME/ready
//   GET  /v2/models/NAME/stats               the batcher's counts: {"batching", "buckets",
//                                             "paddable", "max_batch_rows", "batched_requests",
//                                             "runs", "requests_in_shared_runs",
//                                             "runs_by_rows": {"ROWS": RUNS}, "runs_by_requests"}
//   POST /v2/models/NAME/infer               {"inputs": [{"name", "datatype", "shape", "data"}],
//                                             "outputs": [{"name"}] (optional), "id" (optional)}
//
// A bad request gets a 4xx and {"error": "..."}: 400 for a body that is not JSON or does not fit
// the model (name, datatype, shape, element count or value), 404 for an unknown model or path,
// 413 for a body over --max-body-bytes (default: what the model's largest valid request needs;
// read and refused up to 4 times that plus 1 MiB, refused unread beyond).
// --port 0 picks a free port; the first line on stdout says which ("listening on HOST:PORT").
// It runs the model once on zeros before it listens, so a model the device cannot run is an error
// at start (exit 1), not at the first request. SIGINT or SIGTERM stops it after the requests in
// flight.
#include "inference.h"

#include <httplib.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <string>
#include <sys/socket.h>
#include <thread>

namespace {

using sinter::serving::errorBody;
using sinter::serving::InferenceModel;

struct Options {
  std::string model, name, host = "127.0.0.1";
  int port = 8000;
  int sessions = 0;          ///< 0: one per core
  int threadsPerSession = 1;
  int httpThreads = 0;       ///< 0: sessions + 64, so waiting clients never starve the pool
  long long maxBodyBytes = 0; ///< 0: from the model
  long long maxBatch = 0;     ///< 0: the largest bucket
  long long maxQueueDelayUs = 0;
};

int usage(const char *problem) {
  std::fprintf(stderr,
               "sinter_server: %s\nusage: sinter_server MODEL.so [--name NAME] [--host HOST] "
               "[--port N] [--sessions N] [--threads-per-session N] [--http-threads N] "
               "[--max-body-bytes N] [--max-batch N] [--max-queue-delay-us N]\n",
               problem);
  return 2;
}

std::string defaultName(const std::string &path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  size_t dot = base.rfind(".so");
  return dot != std::string::npos && dot + 3 == base.size() ? base.substr(0, dot) : base;
}

/// The most bytes the server reads of any body: room to answer a moderately oversized body
/// properly, without reading arbitrary amounts.
size_t hardBodyLimit(size_t limit) { return limit * 4 + (size_t(1) << 20); }

std::string tooLarge(size_t limit) {
  return "the request body is larger than this server's limit of " + std::to_string(limit) +
         " bytes (--max-body-bytes)";
}

void json(httplib::Response &response, int status, const std::string &body) {
  response.status = status;
  response.set_content(body, "application/json");
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag.rfind("--", 0) != 0) {
      if (!options.model.empty())
        return usage("one model only");
      options.model = flag;
      continue;
    }
    if (i + 1 >= argc)
      return usage(("missing the value of " + flag).c_str());
    std::string value = argv[++i];
    char *end = nullptr;
    long long number = std::strtoll(value.c_str(), &end, 10);
    bool isNumber = end && *end == '\0' && !value.empty();
    if (flag == "--name")
      options.name = value;
    else if (flag == "--host")
      options.host = value;
    else if (isNumber && flag == "--port" && number >= 0 && number < 65536)
      options.port = int(number);
    else if (isNumber && flag == "--sessions" && number >= 1 && number <= 4096)
      options.sessions = int(number);
    else if (isNumber && flag == "--threads-per-session" && number >= 1 && number <= 1024)
      options.threadsPerSession = int(number);
    else if (isNumber && flag == "--http-threads" && number >= 1 && number <= 4096)
      options.httpThreads = int(number);
    else if (isNumber && flag == "--max-body-bytes" && number >= 1)
      options.maxBodyBytes = number;
    else if (isNumber && flag == "--max-batch" && number >= 1)
      options.maxBatch = number;
    else if (isNumber && flag == "--max-queue-delay-us" && number >= 0 && number <= 10000000)
      options.maxQueueDelayUs = number;
    else
      return usage(("bad option or value: " + flag + " " + value).c_str());
  }
  if (options.model.empty())
    return usage("no model given");
  if (options.name.empty())
    options.name = defaultName(options.model);
  if (options.sessions == 0)
    options.sessions = std::max(1u, std::thread::hardware_concurrency());
  if (options.httpThreads == 0)
    options.httpThreads = options.sessions + 64;

  // SIGINT and SIGTERM go to one thread that stops the server (blocked before any thread starts,
  // so every thread inherits the mask).
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGINT);
  sigaddset(&stopSignals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  std::unique_ptr<InferenceModel> model;
  try {
    sinter::serving::ServingOptions serving;
    serving.maxSessions = options.sessions;
    serving.threadsPerSession = options.threadsPerSession;
    serving.maxBatch = options.maxBatch;
    serving.maxQueueDelayUs = options.maxQueueDelayUs;
    model = std::make_unique<InferenceModel>(options.model, options.name, serving);
  } catch (const sinter::rt::Error &error) {
    std::fprintf(stderr, "sinter_server: %s\n", error.what());
    return 1;
  }
  size_t maxBody = options.maxBodyBytes > 0 ? size_t(options.maxBodyBytes)
                                            : model->largestRequestBytes();

  httplib::Server server;
  int httpThreads = options.httpThreads;
  server.new_task_queue = [httpThreads] { return new httplib::ThreadPool(size_t(httpThreads)); };
  // Two limits. A body over maxBody but under the hard limit is read and then refused with a 413
  // on a connection that stays usable; one over the hard limit is refused from its Content-Length
  // unread, and the connection is closed (a client still sending may see it reset).
  server.set_payload_max_length(hardBodyLimit(maxBody));
  server.set_keep_alive_max_count(1000000);
  server.set_tcp_nodelay(true); // a response's small writes go out at once (no Nagle delay)
  server.set_read_timeout(30, 0);
  server.set_write_timeout(30, 0);

  auto ready = [](const httplib::Request &, httplib::Response &response) { response.status = 200; };
  server.Get("/v2/health/live", ready);
  server.Get("/v2/health/ready", ready);
  server.Get("/v2", [&](const httplib::Request &, httplib::Response &response) {
    json(response, 200,
         "{\"name\": \"sinter_server\", \"version\": \"1\", \"extensions\": []}");
  });
  // The model routes; an unknown name is a 404 that says which names there are.
  auto withModel = [&](const httplib::Request &request, httplib::Response &response,
                       auto &&serve) {
    const std::string name = request.matches[1];
    if (name != model->name())
      return json(response, 404,
                  errorBody("unknown model '" + name + "'; this server has '" + model->name() + "'"));
    serve();
  };
  server.Get(R"(/v2/models/([^/]+))", [&](const httplib::Request &request,
                                          httplib::Response &response) {
    withModel(request, response, [&] {
      sinter::serving::Reply reply = model->metadata();
      json(response, reply.status, reply.body);
    });
  });
  server.Get(R"(/v2/models/([^/]+)/stats)", [&](const httplib::Request &request,
                                                httplib::Response &response) {
    withModel(request, response, [&] {
      sinter::serving::Reply reply = model->stats();
      json(response, reply.status, reply.body);
    });
  });
  server.Get(R"(/v2/models/([^/]+)/ready)", [&](const httplib::Request &request,
                                                httplib::Response &response) {
    withModel(request, response, [&] { response.status = 200; });
  });
  server.Post(R"(/v2/models/([^/]+)/infer)", [&](const httplib::Request &request,
                                                 httplib::Response &response) {
    withModel(request, response, [&] {
      if (request.body.size() > maxBody)
        return json(response, 413, errorBody(tooLarge(maxBody)));
      sinter::serving::Reply reply = model->infer(request.body);
      json(response, reply.status, reply.body);
    });
  });
  // Every other failure (no such path, a body over the limit, ...) gets a JSON message too.
  server.set_error_handler([maxBody](const httplib::Request &request, httplib::Response &response) {
    if (!response.body.empty())
      return;
    std::string message =
        response.status == 413 ? tooLarge(maxBody)
        : response.status == 404 ? "no such endpoint: " + request.method + " " + request.path
                                 : "the request could not be served (HTTP " +
                                       std::to_string(response.status) + ")";
    response.set_content(errorBody(message), "application/json");
  });
  server.set_exception_handler(
      [](const httplib::Request &, httplib::Response &response, std::exception_ptr failure) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(failure);
        } catch (const std::exception &error) {
          what = error.what();
        } catch (...) {
        }
        json(response, 500, errorBody("internal server error: " + what));
      });

  // The listening socket's backlog: the library's is 5, so a burst of new connections beyond it
  // could be reset. Keep the socket (default options, plus a note of it) and raise it after bind.
  int listening = -1;
  server.set_socket_options([&listening](socket_t socket) {
    httplib::default_socket_options(socket);
    listening = socket;
  });

  int port = options.port;
  if (port == 0)
    port = server.bind_to_any_port(options.host.c_str());
  else if (!server.bind_to_port(options.host.c_str(), port))
    port = -1;
  if (port < 0 || listening < 0 || ::listen(listening, SOMAXCONN) != 0) {
    std::fprintf(stderr, "sinter_server: cannot listen on %s:%d\n", options.host.c_str(),
                 options.port);
    return 1;
  }
  std::string batching =
      model->batching() ? "batches of up to " + std::to_string(model->maxBatchRows()) +
                              " rows within " + std::to_string(options.maxQueueDelayUs) + " us"
                        : "no batching";
  std::printf("listening on %s:%d (model '%s', %d sessions, %d HTTP threads, body limit %zu, "
              "%s)\n",
              options.host.c_str(), port, model->name().c_str(), options.sessions, httpThreads,
              maxBody, batching.c_str());
  std::fflush(stdout);

  std::thread stopper([&] {
    int signal = 0;
    sigwait(&stopSignals, &signal);
    server.stop();
  });
  bool listened = server.listen_after_bind();
  if (stopper.joinable()) {
    // listen ended without a signal (an error): wake the stopper so it can end.
    pthread_kill(stopper.native_handle(), SIGTERM);
    stopper.join();
  }
  return listened ? 0 : 1;
}
