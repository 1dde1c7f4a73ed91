use shed::shed;

#[shed(class = "background")]
struct Handler;

fn main() {
    let _ = Handler;
}
