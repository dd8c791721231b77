Running 4s test @ http://127.0.0.1:32921/small.txt
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   472.73us    0.91ms  10.95ms   89.24%
    Req/Sec    64.49k     7.00k   77.34k    60.00%
  Latency Distribution
     50%   73.00us
     75%  483.00us
     90%    1.47ms
     99%    4.29ms
  513785 requests in 4.01s, 108.29MB read
Requests/sec: 128165.02
Transfer/sec:     27.01MB
