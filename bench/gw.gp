# bench/gw.gp - the plot of gw.sh's load rows (gnuplot -e "dir='bench/results'").
set datafile separator ','
set terminal pngcairo size 1100,450 font 'sans,10'
set output dir.'/gw.png'
set multiplot layout 1,2 title 'bench/gw.sh: gateways in front of memcached, 90% GET / 10% SET (medians)'
set logscale x 10
set xlabel 'client connections'
set grid ytics
set key top right noenhanced
set yrange [0:*]
set xrange [40:16000]
names = system("awk -F, '$1 == \"load\" && !seen[$2]++ { printf \"%s \", $2 }' ".dir."/gw.csv")
rows(g) = '< grep "^load,'.g.'," '.dir.'/gw.csv'
set ylabel 'requests/s'
plot for [g in names] rows(g) using 3:5 with linespoints lw 2 pt 7 title g
set ylabel 'p99 latency, us'
set logscale y 10
set yrange [*:*]
plot for [g in names] rows(g) using 3:7 with linespoints lw 2 pt 7 title g
unset multiplot
