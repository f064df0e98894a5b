// weft-bench `server` section, Tokio peer: a TCP echo server on 127.0.0.1.
//
//   weft-echo-tokio WORKER_THREADS
//
// Listens on an ephemeral port, prints it on stdout (one line), then spawns
// one tokio task per connection that echoes every byte back until EOF. Exits
// when stdin reaches EOF (the benchmark closes it to stop the server), so a
// forgotten server cannot outlive its parent.
use std::io::{Read, Write};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn main() {
    let workers: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_io()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        // std's listener lets us choose the backlog (tokio's bind uses 1024).
        let sock = tokio::net::TcpSocket::new_v4().expect("socket");
        sock.set_reuseaddr(true).expect("SO_REUSEADDR");
        sock.bind("127.0.0.1:0".parse().unwrap()).expect("bind");
        let listener: TcpListener = sock.listen(4096).expect("listen");
        let port = listener.local_addr().expect("local_addr").port();
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", port).unwrap();
            out.flush().unwrap();
        }
        // stdin EOF ends the process: a plain thread blocks in read.
        std::thread::spawn(|| {
            let mut buf = [0u8; 256];
            let mut stdin = std::io::stdin();
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => std::process::exit(0),
                    Ok(_) => {}
                }
            }
        });
        loop {
            let (mut conn, _) = match listener.accept().await {
                Ok(c) => c,
                Err(_) => continue, // e.g. EMFILE: keep serving the others
            };
            let _ = conn.set_nodelay(true);
            tokio::spawn(async move {
                let mut buf = [0u8; 64];
                loop {
                    let n = match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    // write_all loops over partial writes.
                    if conn.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
}
