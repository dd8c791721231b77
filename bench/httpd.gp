# bench/httpd.gp - plots of httpd.sh's results (gnuplot -e "dir='bench/results'"):
# requests/s, p99 and server CPU per request against connections, per file.
set datafile separator ','
set terminal pngcairo size 1200,900 font 'sans,10'
set output dir.'/httpd.png'
set multiplot layout 3,2 title 'bench/httpd.sh: static files under wrk on loopback (medians)'
set grid ytics
set logscale x
set xtics (16, 256, 1024)
set key below horizontal noenhanced
set yrange [0:*]
set xrange [10:1600]
rows(s, f) = sprintf("< awk -F, '$1 == \"%s\" && $2 == \"%s\"' %s/httpd.csv", s, f, dir)
servers = system("awk -F, 'NR > 1 && !seen[$1]++ { printf \"%s \", $1 }' ".dir."/httpd.csv")
do for [f in 'small.txt 64k.bin'] {
    set title f noenhanced
    set ylabel 'requests/s'
    plot for [s in servers] rows(s, f) using 3:4 with linespoints title s
}
do for [f in 'small.txt 64k.bin'] {
    set title f.': p99 latency' noenhanced
    set ylabel 'p99 us'
    plot for [s in servers] rows(s, f) using 3:5 with linespoints title s
}
do for [f in 'small.txt 64k.bin'] {
    set title f.': server CPU per request' noenhanced
    set ylabel 'CPU us per request'
    set xlabel 'client connections'
    plot for [s in servers] rows(s, f) using 3:6 with linespoints title s
}
unset multiplot
